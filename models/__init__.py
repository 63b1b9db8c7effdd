"""Estimators (fit / predict / save / load) and the MLflow glue. Imports neither sim nor pipelines."""
