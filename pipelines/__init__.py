"""The commands: the layer that wires the product together (CLI, replays, experiments, serving)."""
# The PAI-shaped workload generator (A-SRPT) lives in sim.asrpt.pai_workload: it draws jobs with the
# simulator's stage catalogue and iteration model. Declared for features' generator registry from here
# (features never imports sim); nothing is imported until a preset names it.
from features.plugins import declare as _declare

_declare("generators", "pai", "sim.asrpt.pai_workload:generate_from_preset")
