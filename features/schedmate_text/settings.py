"""Settings gathered from a job's command, configs and code: flat dotted keys with a priority and the
rule that produced them; the key vocabularies that give a key its meaning."""
from __future__ import annotations

import re
from typing import Any

# source priorities: a value from a higher one is kept
P_ARGV, P_OVERRIDE, P_CONFIG, P_CODE_KW, P_DEFAULT, P_CODE, P_LAUNCH = 100, 95, 80, 70, 60, 50, 90

_MODEL_KEYS = {"arch", "model", "model_name", "modelname", "alg", "algo", "algorithm", "model_type", "network", "net", "backbone", "init_from", "base_model",
               "model_name_or_path", "pretrained_model_name_or_path", "model_id", "model_path", "tokenizer_model"}
_DATA_KEYS = {"dataset", "dataset_name", "data", "data_path", "data_dir", "data_root", "dataset_type", "task_name",
              "env", "env_id", "env_name", "train_file", "root", "dataset_config_name", "name", "training_files",
              "train_files", "training_file"}
_EPOCH_KEYS = {"epochs", "num_epochs", "max_epochs", "num_train_epochs", "n_epochs", "epoch", "nepochs", "train_epochs",
               "total_epochs", "max_epoch", "ep", "training_epochs", "num_training_epochs"}
_STEP_KEYS = {"max_update", "max_updates", "max_steps", "total_steps", "train_iters", "iters", "max_iters", "num_steps", "total_timesteps",
              "num_iterations", "max_iter", "train_steps", "max_train_steps", "steps", "num_train_steps",
              "num_timesteps", "n_timesteps", "max_step", "max_iterations", "iter", "n_iter", "niter", "num_iter", "total_iter", "total_iters", "total_iterations", "total_training_steps",
              "n_iters", "training_steps", "train_iterations", "num_training_steps", "num_env_steps", "max_timesteps",
              "total_env_steps", "num_timesteps_total", "total_itrs", "max_itrs", "num_itrs", "num_iters", "total_step"}
_BATCH_KEYS = {"batch_size", "per_device_train_batch_size", "train_micro_batch_size_per_gpu", "micro_batch_size",
               "b", "bs", "mini_batch_size", "train_batch_size_per_gpu", "samples_per_gpu", "per_gpu_train_batch_size",
               "batch_size_per_gpu", "device_train_microbatch_size", "batch_size_train", "train_batch_size_per_device",
               "batch", "batch_size_training", "batchsize_per_replica", "batch_size_per_replica", "batchsize",
               "batch_size_per_device", "imgs_per_gpu", "ims_per_gpu", "videos_per_gpu", "clips_per_gpu",
               "train_batch_size0", "train_batch_sizes", "train_batch", "train_bs"}
_GLOBAL_BATCH_KEYS = {"ims_per_batch", "global_batch_size", "total_batch_size", "train_batch_size",
                      "global_train_batch_size"}
_MICRO_BATCH_KEYS = {"micro_batch_size", "per_device_train_batch_size", "train_micro_batch_size_per_gpu",
                     "device_train_microbatch_size",
                     "per_gpu_train_batch_size", "train_batch_size_per_gpu"}
_TOKEN_BATCH_KEYS = {"max_tokens", "tokens_per_batch", "max_tokens_per_batch"}
_ACCUM_KEYS = {"gradient_accumulation_steps", "accum_iter", "update_freq", "accumulate_grad_batches", "grad_accum_steps",
               "gradient_accumulation", "accum_steps", "grad_accum", "accumulation_steps"}
_NODE_KEYS = {"nodes", "num_nodes", "nnodes", "nnode", "n_nodes", "num_machines"}
_TOTAL_GPU_KEYS = {"distributed_world_size"}
_CPU_FLAGS = {"no_cuda", "cpu", "use_cpu", "cpu_only", "force_cpu"}
_GPU_ARG_KEYS = {"num_gpus", "ngpus", "n_gpus", "gpus", "nproc_per_node", "world_size_per_node", "num_proc_per_node",
                 "num_procs_per_node", "gpus_per_node", "num_gpus_per_node", "ngpus_per_node"}
_NAMED_DATA_KEYS = {"dataset", "dataset_name", "data_path", "dataset_path", "env_id", "env_name", "train_file",
                    "train_data", "train_data_path", "dataset_name_or_paths", "dataset_name_or_path"}
_EVAL_PATH = re.compile(r"(^|[._])(val|valid|validation|validator|evaluator|eval|test)([._]|$)|eval_|_eval")



class _Settings:
    def __init__(self) -> None:
        self.items: list[tuple[str, Any, int, str]] = []
        self._ranked: list[tuple[str, Any, int, str]] | None = None

    def put(self, key: str, value: Any, prio: int, source: str) -> None:
        if value is None:
            return
        self._ranked = None
        self.items.append((key.replace("-", "_").lstrip("+"), value, prio, source))

    def put_tree(self, tree: Any, prio: int, source: str, prefix: str = "") -> None:
        if isinstance(tree, dict):
            for k, v in tree.items():
                self.put_tree(v, prio, source, f"{prefix}.{k}" if prefix else str(k))
        else:
            self.put(prefix, tree, prio, source)

    def ranked(self) -> list[tuple[str, Any, int, str]]:
        """Highest priority first; the later insertion wins among equal priorities (overrides come
        after). Computed once until the next put (callers do not modify it)."""
        if self._ranked is None:
            order = sorted(range(len(self.items)), key=lambda i: (-self.items[i][2], -i))
            self._ranked = [self.items[i] for i in order]
        return self._ranked


def _last(key: str) -> str:
    return key.split(".")[-1].lower()


def _as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        s = v.strip().replace(",", "").replace("_", "")
        if re.fullmatch(r"[+]?\d+", s):
            return int(s)
        if re.fullmatch(r"\d+(\.0+)?|\d+(\.\d+)?e\+?\d+", s, re.I):
            f = float(s)
            return int(f) if f.is_integer() else None
    return None


def _merge(dst: dict, src: dict) -> None:
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            _merge(dst[k], v)
        else:
            dst[k] = v


def _yaml_value(v: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(v)
    except yaml.YAMLError:
        return v


