"""Failure Handler and Metric Tracker: general mechanisms from batch 18's first-sight misses (issue 41 item 3:
exception chains, environment/driver errors, localised messages; multi-line records, validation counted in
the epoch bar). Fixtures are our own, shaped like the real logs, not copies of them."""
import pytest

from models.schedmate.failures import FailureHandler
from models.schedmate.tracker import MetricTracker


def _d(lines):
    d = FailureHandler().diagnose(lines)
    return d.line_index, d.kind, d.component


def test_nccl_report_cause_under_last_error():
    lines = ["step 10 loss 1.0",
             "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:100, remote process exited or "
             "there was a network error, NCCL version 2.20.0",
             "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
             "Last error:",
             "socketProgressOpt: Call to recv from 10.0.0.2<4000> failed : Connection reset by peer"]
    assert _d(lines) == (4, "infrastructure", "network")
    # without a "Last error:" block the report line stays the answer
    assert _d(lines[:3])[:2] == (1, "infrastructure")


@pytest.mark.parametrize("after", [
    [""],  # NCCL had no detail: a blank line, then the trace PyTorch attaches
    ["[rank1]: "],  # the same blank line behind a rank tag
    ["Exception raised from checkForNCCLErrors at ProcessGroupNCCL.cpp:1200 (most recent call first):"],
])
def test_empty_last_error_block_keeps_the_report_line(after):
    # the rule takes only the line directly after "Last error:"; it never crosses a blank line (or the
    # start of a stack trace) into unrelated text
    lines = ["epoch 3 step 120",
             "Collective WorkNCCL(SeqNum=7, OpType=ALLGATHER) raised the following async exception: NCCL error: "
             "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
             "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.",
             "Last error:", *after,
             "Exception raised from checkForNCCLErrors at ProcessGroupNCCL.cpp:1200 (most recent call first):",
             "frame #0: c10::Error::Error() + 0x9 (0x7f in libc10.so)"]
    assert _d(lines)[0] == 1


def test_fatal_check_before_a_launcher_wrapper_and_bare_nccl_failures():
    lines = ["[2020-01-01 00:00:00.000: F comm/manager.cc:42] Check failed: r == ncclSuccess NCCL error: "
             "unhandled system error",
             "Aborted",
             "Traceback (most recent call last):",
             '  File "/usr/lib/python3.8/subprocess.py", line 364, in check_call',
             "    raise CalledProcessError(retcode, cmd)",
             "subprocess.CalledProcessError: Command 'python train.py' returned non-zero exit status 134."]
    assert _d(lines) == (0, "infrastructure", "NCCL")
    assert _d(["# Using devices", "host: Test NCCL failure common.cu:700 'unhandled system error'"]) == \
        (1, "infrastructure", "NCCL")


def test_nvml_error_codes_are_the_gpu_driver():
    lines = ["Traceback (most recent call last):", '  File "nvml.py", line 48, in _check_return',
             "    raise NvmlException(ret)", "pkg.nvml.NvmlException: NVML_ERROR_LIB_RM_VERSION_MISMATCH"]
    assert _d(lines) == (3, "infrastructure", "GPU")


@pytest.mark.parametrize("line", [
    'OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading "x.dll"',
    '**OSError: [WinError 1455] 页面文件太小，无法完成操作。 Error loading "D:\\env\\torch\\lib\\x.dll"**',
])
def test_windows_paging_file_is_host_memory_in_any_language_and_markdown(line):
    assert _d(["loading data", line]) == (1, "framework", "host memory")


def test_exception_message_split_off_by_another_process():
    lines = ["Traceback (most recent call last):", "Traceback (most recent call last):",
             '  File "<string>", line 1, in <module>', '  File "<string>", line 1, in <module>',
             '  File "multiprocessing\\heap.py", line 55, in __setstate__',
             'OSError  File "multiprocessing\\spawn.py", line 115, in _main',
             '  File "multiprocessing\\heap.py", line 55, in __setstate__',
             ": [WinError 1455] The paging file is too small for this operation to"]
    assert _d(lines) == (7, "framework", "host memory")


def test_traceback_cut_before_its_exception_line_takes_the_printed_error():
    lines = ["epoch 1/10",
             "Error CUDA driver version is insufficient for CUDA runtime version at line 167 in file ops.cu",
             "Traceback (most recent call last):", '  File "run.py", line 86, in _run_code', "    exec(code)", "..."]
    assert _d(lines) == (1, "script", "environment")


def test_native_heap_error_before_a_worker_killed_by_abort():
    lines = ["Training Epoch 3:   0% 0/50 [00:00<?, ?it/s]src/tcmalloc.cc:283] Attempt to free invalid pointer 0x1 ",
             "Traceback (most recent call last):",
             '  File "/usr/lib/python3/dist-packages/torch/utils/data/_utils/signal_handling.py", line 66, in handler',
             "    _error_if_any_worker_fails()",
             "RuntimeError: DataLoader worker (pid 1234) is killed by signal: Aborted. "]
    assert _d(lines) == (0, "script", "environment")
    # without the native message, the worker's death stays the dataloader's
    assert _d(lines[1:])[1:] == ("framework", "dataloader")


def test_removed_library_names_and_library_call_signatures_are_the_environment():
    alias = ["Traceback (most recent call last):", '  File "main.py", line 80, in select', "    x = np.float(v)",
             "AttributeError: module 'numpy' has no attribute 'float'.",
             "`np.float` was a deprecated alias for the builtin `float`. To avoid this error use `float` by itself."]
    assert _d(alias) == (3, "script", "environment")
    lib = ["Traceback (most recent call last):", '  File "train.py", line 35, in run', "    m = Model.load(p)",
           '  File "/env/lib/python3.9/site-packages/pkg/modeling.py", line 1489, in load',
           "    model = cls(config, **kwargs)", "TypeError: __init__() got an unexpected keyword argument 'mode'"]
    assert _d(lib) == (5, "script", "environment")
    own = lib[:3] + ["TypeError: build() got an unexpected keyword argument 'mode'"]
    assert _d(own) == (3, "script", "type")  # the job's own function: a script bug


def _t(lines):
    p = MetricTracker().track(lines)
    return p.step, p.total_steps, p.loss


def test_multi_line_json_record():
    lines = ['{"accuracy_cls": 0.9, ', '  "eta": "1 day, 10:00:00",', '  "iter": 5000,', '  "loss": 0.75, ',
             '  "loss_cls": 0.2, ', '  "lr": 0.01, ', '  "time": 0.5}']
    assert _t(lines) == (5000, None, pytest.approx(0.75))


def test_record_cut_by_the_pager_continues_on_the_next_line():
    lines = ["2020-01-01 10:00:00,000 - det - INFO - Epoch [1][50/900]    lr: 0.001, time: 1.0, loss_rpn: 0.3, "
             "loss_cls: 0.4$", " loss_mask: 0.5, loss: 1.2                     ",
             "2020-01-01 10:01:00,000 - det - INFO - Epoch [1][100/900]    lr: 0.001, time: 1.0, loss_rpn: 0.2, "
             "loss_cls: 0.3$", " loss_mask: 0.4, loss: 0.9                     "]
    assert _t(lines) == (100, None, pytest.approx(0.9))


def test_growing_batch_counter_is_the_step_a_constant_one_a_batch_size():
    rec = "epoch   0 | lr 0.0001 | batch {:6d} | examples/s:  20.5 | loss: {} | time elapsed: 00h01m00s"
    assert _t([rec.format(b, v) for b, v in ((0, 0.5), (250, 0.4), (500, 0.3))]) == (500, None, pytest.approx(0.3))
    assert _t([rec.format(32, v).replace("epoch   0", f"epoch   {e}") for e, v in ((0, 0.5), (1, 0.4))])[0] == 1


def test_global_step_in_a_bar_postfix_and_validation_counted_in_the_epoch_bar():
    bar = "Epoch {e}:  90%|#########| {n}/{t} [01:00<00:05,  2.0it/s, loss=0.5, v_num=3{g}]"
    val = "Validating:  50%|#####     | {k}/40 [00:10<00:10,  2.0it/s]"
    lines = [bar.format(e=1, n=100, t=140, g=", global_step=199.0"), val.format(k=20),
             bar.format(e=1, n=120, t=140, g=", global_step=199.0"), val.format(k=22)]
    assert _t(lines)[0] == 199  # the trainer's own count
    lines = [bar.format(e=0, n=100, t=140, g=""), val.format(k=0), bar.format(e=0, n=101, t=140, g=""),
             val.format(k=1), bar.format(e=0, n=102, t=140, g="")]
    assert _t(lines)[0] == 100  # training stopped where validation began (140 = 100 + 40)
    # a bar that does not go on counting during validation counts training alone
    lines = [bar.format(e=0, n=140, t=140, g=""), val.format(k=10), bar.format(e=0, n=140, t=140, g="")]
    assert _t(lines)[0] == 140


def test_elastic_summary_inside_a_traceback_names_the_killed_rank():
    lines = ["Traceback (most recent call last):", '  File "/usr/bin/torchrun", line 8, in <module>',
             "    raise ChildFailedError(", "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
             "train.py FAILED", "Root Cause (first observed failure):", "[0]:", "  rank      : 3 (local_rank: 3)",
             "  exitcode  : -9 (pid: 123)", "  error_file: <N/A>"]
    assert _d(lines) == (8, "framework", "host memory")


@pytest.mark.parametrize("line", ["ERROR: error code -9", "./run.sh: line 16: 29166 Killed     python train.py",
                                  "MemoryError"])
def test_sigkill_and_python_memory_errors_are_host_memory(line):
    assert _d(["Solving", line, ""])[1:] == ("framework", "host memory")


def test_original_exception_of_a_chain_when_handling_it_failed_too():
    lines = ["Traceback (most recent call last):", '  File "serialization.py", line 499, in _save',
             "    zip_file.write_record(name, ptr, n)", "MemoryError", "",
             "During handling of the above exception, another exception occurred:", "",
             "Traceback (most recent call last):", '  File "serialization.py", line 259, in __exit__',
             "RuntimeError: [enforce fail at inline_container.cc:300] . unexpected pos 6057217600 vs 6057217496"]
    assert _d(lines) == (3, "framework", "host memory")


def test_hub_unreachable_quoted_exception_illegal_instruction_and_empty_data():
    assert _d(["\"OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it"]) == \
        (0, "infrastructure", "network")
    assert _d(["./train.sh: line 3: 4242 Illegal instruction     python train.py"]) == (0, "script", "environment")
    assert _d(["loading", "ValueError: num_samples should be a positive integer value, but got num_samples=0"]) == \
        (1, "script", "data")


def test_dict_record_glued_to_the_end_of_a_bar():
    bar = "  6%|######    | {n}/625 [54:29<13:09:57, 81.02s/it][INFO|2025-01-01 07:12:21] trainer.callbacks:157 >> "
    lines = ["{'loss': 1.2, 'grad_norm': 1.5, 'learning_rate': 2e-05, 'epoch': 0.05}",
             bar.format(n=35) + "{'loss': 1.1, 'learning_rate': 2e-05, 'epoch': 0.06}",
             "{'loss': 1.1, 'grad_norm': 1.5, 'learning_rate': 2e-05, 'epoch': 0.06}",
             bar.format(n=40) + "{'loss': 1.0, 'learning_rate': 2e-05, 'epoch': 0.06}"]
    assert _t(lines) == (40, 625, pytest.approx(1.0))
