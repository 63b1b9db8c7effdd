"""A-SRPT (INFOCOM '25) plug-ins on Engine v2: stage profiles and pipeline configurations
(:mod:`sim.asrpt.profiles`), the per-iteration time model Eq. 4-7 (:mod:`sim.asrpt.iteration`), the
placement-dependent speed hook (:mod:`sim.asrpt.performance`) and the exact mapping optimum as an
integer program (:mod:`sim.asrpt.ilp`). The Heavy-Edge placement lives in sim/placement/heavy_edge.py.
"""
