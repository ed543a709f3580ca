"""Preset numbers: the notebook's architectures, wiring feasibility and the epoch cost unit."""

from __future__ import annotations

import pytest

from logicars.presets import PRESETS, Preset, get_preset
from logicars.spec import ModelSpec

NAMES = ["gol", "checkerboard", "checkerboard-async", "lizard", "colored-g"]


def test_exactly_the_five_presets() -> None:
    assert list(PRESETS) == NAMES
    for name, preset in PRESETS.items():
        assert preset.name == name
        assert preset.description


# fmt: off
@pytest.mark.parametrize(
    ("name", "c", "hw", "batch", "steps", "periodic", "k", "perceive", "update", "lr", "epochs"),
    [
        ("gol", 1, 3, 20, 1, True, 16, [9, 8, 4, 2, 1],
         [17] + [128] * 17 + [64, 32, 16, 8, 4, 2, 1], 0.05, 3000),
        # the notebook's lr 0.05 doubled and its batch 2 halved since 2026-11-29
        # (docs/results.md, Learning rate and Batch size)
        ("checkerboard", 8, 16, 1, 20, False, 16, [9, 8, 4, 2],
         [264] + [256] * 10 + [128, 64, 32, 16, 8, 8], 0.1, 500),
        ("checkerboard-async", 8, 14, 1, 50, False, 16, [9, 8, 4, 2],
         [264] + [256] * 14 + [128, 64, 32, 16, 8, 8], 0.05, 800),
        # the coloured G's model at 20 steps since 2026-11-30 (examples/lizard-grow: the
        # paper's, 128 channels, 12 steps on the torus)
        ("lizard", 64, 20, 1, 20, False, 4, [9, 8, 4, 2],
         [576] + [512] * 8 + [256, 128, 64], 0.06, 3500),
        ("colored-g", 64, 16, 1, 15, False, 4, [9, 8, 4, 2],
         [576] + [512] * 8 + [256, 128, 64], 0.06, 3000),
    ],
)
# fmt: on
def test_preset_numbers(
    name: str, c: int, hw: int, batch: int, steps: int, periodic: bool, k: int,
    perceive: list[int], update: list[int], lr: float, epochs: int,
) -> None:
    p = PRESETS[name]
    s = p.spec
    assert (s.channels, p.height, p.width, p.batch) == (c, hw, hw, batch)
    assert (s.num_steps, s.periodic, p.lr, p.paper_epochs()) == (steps, periodic, lr, epochs)
    assert s.perceive.n_kernels == k
    assert s.perceive.layers == perceive
    assert s.update.layers == update


def test_restarts_fit_the_epoch_budget() -> None:
    # A preset that restarts trains whole attempts; one that trains longer than the
    # notebook (every restarting one) records the notebook's epochs.
    for p in PRESETS.values():
        if p.restart_every is not None:
            assert p.epochs % p.restart_every == 0 and p.epochs > p.restart_every
            assert p.notebook_epochs is not None
        if p.notebook_epochs is not None:
            assert p.epochs > p.notebook_epochs


def test_fire_rate_and_loss_channels() -> None:
    for name, p in PRESETS.items():
        if name == "checkerboard-async":
            assert p.spec.fire_rate == 0.6 and p.spec.is_async
        else:
            assert p.spec.fire_rate is None and not p.spec.is_async
        expected = [0, 1, 2] if name == "colored-g" else [0]
        assert p.spec.loss_channels == expected


@pytest.mark.parametrize("preset", PRESETS.values(), ids=list(PRESETS))
def test_layer_widths_chain(preset: Preset) -> None:
    s = preset.spec
    width = s.perceive.layers[-1]
    assert s.perceive.layers[:2] == [9, 8]
    assert s.update.layers[0] == s.channels + s.channels * width * s.perceive.n_kernels
    assert s.update.layers[-1] == s.channels


@pytest.mark.parametrize("preset", PRESETS.values(), ids=list(PRESETS))
def test_wiring_is_feasible(preset: Preset) -> None:
    for net in (preset.spec.perceive, preset.spec.update):
        assert len(net.connections) == len(net.layers) - 1
    p = preset.spec.perceive
    assert p.connections == ["first_kernel"] + ["unique"] * (len(p.layers) - 2)
    assert preset.spec.update.connections == ["unique"] * (len(preset.spec.update.layers) - 1)
    for net in (p, preset.spec.update):
        for conn, n_in, n_out in zip(net.connections, net.layers, net.layers[1:]):
            if conn == "unique":
                assert 2 * n_out >= n_in, (conn, n_in, n_out)
                assert n_in * (n_in - 1) // 2 >= n_out, (conn, n_in, n_out)


def test_checkerboard_cost_unit() -> None:
    p = get_preset("checkerboard")
    # 1*16*16*20 cells x (16*8*(8+4+2) + 2816) gates = 23,592,960: half DESIGN.md's
    # "~47 M", which is the notebook's batch of 2 (the preset trains on one start).
    assert p.batch == 1
    assert p.gate_cell_evals_per_epoch() == 23_592_960
    assert abs(2 * p.gate_cell_evals_per_epoch() - 47e6) / 47e6 < 0.01
    assert p.gates() == 16 * (8 + 4 + 2) + 256 * 10 + 128 + 64 + 32 + 16 + 8 + 8


def test_gol_gate_count() -> None:
    assert get_preset("gol").gates() == 16 * 15 + 128 * 17 + 64 + 32 + 16 + 8 + 4 + 2 + 1


def test_spec_roundtrips_through_json() -> None:
    for p in PRESETS.values():
        assert ModelSpec.from_json(p.spec.to_json()) == p.spec


def test_get_preset() -> None:
    assert get_preset("checkerboard") is PRESETS["checkerboard"]
    assert get_preset("colored_g") is PRESETS["colored-g"]
    with pytest.raises(ValueError) as err:
        get_preset("mandelbrot")
    msg = str(err.value)
    assert "mandelbrot" in msg
    for name in NAMES:
        assert name in msg


def test_presets_are_frozen() -> None:
    with pytest.raises(AttributeError):
        PRESETS["gol"].batch = 1  # type: ignore[misc]
