"""A-SRPT (INFOCOM '25) plug-ins on Engine v2: stage profiles and pipeline configurations
(:mod:`sim.asrpt.profiles`), the per-iteration time model Eq. 4-7 (:mod:`sim.asrpt.iteration`), the
placement-dependent speed hook (:mod:`sim.asrpt.performance`), per-job groups, models and true
iterations for any trace (:mod:`sim.asrpt.jobs`) and the exact mapping optimum as an integer program
(:mod:`sim.asrpt.ilp`). ``--performance asrpt`` is sim.performance.make_performance; ``--predict
iterations=...`` is sim.predictors.predict_kind. Heavy-Edge's stage mapping is part of the iteration model
(:func:`sim.asrpt.iteration.heavy_edge_map`); the Heavy-Edge placement plug-in that uses it lives in
sim/placement/heavy_edge.py (placements import A-SRPT's model, never the other way round).
"""
