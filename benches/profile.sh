#!/usr/bin/env bash
# Profiles of the checkerboard epoch (docs/performance.md): CPU time per function,
# simulated cache misses, allocations per epoch. Run from the repository root.
#   benches/profile.sh [EPOCHS]        (default 30; about a minute on 2 cores)
set -euo pipefail
epochs=${1:-30}
# The checkerboard preset's epoch: one start per batch, 128 cells per chunk.
preset=(--batch 1 --cells 128)
out=${OUT:-target/profile}
mkdir -p "$out"

# CPU: sampled with the cpu-clock software event (this VM has no hardware counters).
cargo build -q -r -p logicars-core --example epochs
bin=target/release/examples/epochs
perf record -q -e cpu-clock -o "$out/perf.data" "$bin" "$epochs" 1 "${preset[@]}"
# perf 6.1 does not read this binary's symbols, so samples are mapped to functions here.
perf script -i "$out/perf.data" --show-mmap-events -F ip,dso 2>/dev/null >"$out/samples.txt"
nm -C --defined-only "$bin" >"$out/symbols.txt"
readelf -lW "$bin" >"$out/segments.txt"
python3 - "$out" "$(realpath "$bin")" <<'PY'
import bisect, collections, re, sys
out, binary = sys.argv[1], sys.argv[2]
syms = sorted((int(a, 16), name.strip()) for a, t, name in
              (l.split(" ", 2) for l in open(f"{out}/symbols.txt")) if t in "tTwW")
starts = [a for a, _ in syms]
# File offset -> address of the executable segment.
seg = next(l.split() for l in open(f"{out}/segments.txt") if "LOAD" in l and "R E" in l)
shift = int(seg[2], 16) - int(seg[1], 16)
maps, counts = [], collections.Counter()
for line in open(f"{out}/samples.txt"):
    m = re.search(r"\[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ (0x[0-9a-f]+|0) .*r-xp (\S+)", line)
    if m and m.group(4) == binary:
        maps.append(tuple(int(g, 16) for g in m.groups()[:3]))
        continue
    f = line.split()
    if len(f) == 2 and f[1] == f"({binary})":
        ip = int(f[0], 16)
        for start, size, pgoff in maps:
            if start <= ip < start + size:
                i = bisect.bisect_right(starts, ip - start + pgoff + shift) - 1
                counts[syms[i][1][:90]] += 1
    elif len(f) == 2:
        counts["(other: " + f[1].strip("()").split("/")[-1] + ")"] += 1
total = sum(counts.values())
for name, n in counts.most_common(12):
    print(f"{100 * n / total:5.1f}%  {name}")
PY

# Cache: valgrind has no AVX-512, so an x86-64-v3 build on the AVX2 path, with the
# caches of an AMD EPYC (Zen 4) core: 32 KiB 8-way L1d, 1 MiB 8-way L2 as the last level.
RUSTFLAGS="-C target-cpu=x86-64-v3" cargo build -q -r -p logicars-core --example epochs \
    --target-dir target/v3
LOGICARS_SIMD=avx2 valgrind --tool=cachegrind --cache-sim=yes \
    --D1=32768,8,64 --LL=1048576,8,64 --cachegrind-out-file="$out/cachegrind.out" \
    target/v3/release/examples/epochs 2 1 "${preset[@]}" 2>&1 | grep -E 'epochs|I +refs|D1 +misses|LLd misses'

# Memory: allocations per steady-state epoch (counting allocator) and peak RSS.
cargo test -q -r -p logicars-core --test alloc -- --nocapture 2>&1 | grep -E 'allocations|result'
/usr/bin/time -f 'peak RSS %M KB' "$bin" "$epochs" 2 "${preset[@]}"
