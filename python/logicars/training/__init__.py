"""Training: the settings of a run (`config`), and the policies its loop composes."""
