"""Synthetic job corpus for SchedMate (no public one exists): training repositories, launch commands,
runtime and failed logs with ground truth, bound to trace jobs by group."""
from features.jobcorpus.catalog import DATASETS, FAMILIES, FAMILY_BY_KEY, STYLES, Family
from features.jobcorpus.logs import CAUSES, KINDS, FailureTruth, ProgressTruth
from features.jobcorpus.material import JobMaterial, iter_corpus, material_for_job, write_corpus
from features.jobcorpus.spec import JobTruth, stable_seed

__all__ = ["CAUSES", "DATASETS", "FAMILIES", "FAMILY_BY_KEY", "Family", "FailureTruth", "JobMaterial",
           "JobTruth", "KINDS", "ProgressTruth", "STYLES", "iter_corpus", "material_for_job", "stable_seed",
           "write_corpus"]
