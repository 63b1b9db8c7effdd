"""SchedMate Metric Tracker on the progress formats it missed on real logs (issue 25, item 1). The lines
are written here in the shape of those tools' output (our own numbers and wording)."""
from __future__ import annotations

import math

import pytest

from models.schedmate.tracker import MetricTracker


def _three(line: str, steps=(100, 200, 300)) -> list[str]:
    return [line.format(s=s) for s in steps]


@pytest.mark.parametrize("name,lines,step,total,loss", [
    ("fairseq-legacy-pipes", _three("| epoch 004 | loss 5.117 | nll_loss 3.8 | ppl 13.9 | wps 18000 | ups 4.2 | "
                                    "num_updates {s} | lr 0.0004"), 300, None, 5.117),
    ("fairseq-json", _three('2023-05-01 09:00:00 | INFO | train_inner | {{"epoch": 4, "update": 3.5, "loss": "5.117", '
                            '"nll_loss": "3.8", "ups": "4.2", "num_updates": "{s}", "lr": "0.0004", "wall": "900"}}'),
     300, None, 5.117),
    ("trainer-log-jsonl", _three('{{"current_steps": {s}, "total_steps": 2400, "loss": 0.9152, "learning_rate": 2e-05, '
                                 '"epoch": 0.4, "percentage": 12.5, "elapsed_time": "0:05:00", "remaining_time": "0:35:00"}}'),
     300, 2400, 0.9152),
    ("training-epoch-bracket", ["Training Epoch:[853/1500] loss: 0.0412 lr: 0.0001",
                                "Training Epoch:[854/1500] loss: 0.0409 lr: 0.0001",
                                "Training Epoch:[855/1500] loss: 0.0405 lr: 0.0001"], 855, 1500, 0.0405),
    ("epoch-colon-loss", ["Epoch 1: loss=1.2201, acc=0.55", "Epoch 2: loss=0.9912, acc=0.63"], 2, None, 0.9912),
    ("iteration-comma", _three("Iteration {s}, lr = 0.01, loss = 0.6620 (0.41 s/iter)"), 300, None, 0.662),
    ("tf-dict-step", _three("{{'loss': 0.3104, 'step': {s}, 'learning_rate': 5e-05}}"), 300, None, 0.3104),
    ("detectron2-total-loss", _three("[05/01 09:00:00 d2.utils.events]:  eta: 1:10:00  iter: {s}  total_loss: 0.7431  "
                                     "loss_cls: 0.22  loss_box_reg: 0.31  time: 0.3912  data_time: 0.0101  lr: 0.02"),
     300, None, 0.7431),
    ("dict-with-line-number", _three("  {s}: {{'loss': 0.2871, 'step': {s}, 'epoch': 1.5}}"), 300, None, 0.2871),
    ("epoch-total-from-pairs", ["Epoch 3/90 | step 12078 | 2068/5005 | loss 1.2401 | 0.20 s/it",
                                "Epoch 3/90 | step 12080 | 2070/5005 | loss 1.2398 | 0.20 s/it"], 12080, 90 * 5005, 1.2398),
])
def test_formats(name, lines, step, total, loss):
    p = MetricTracker().track(lines)
    assert (p.step, p.total_steps) == (step, total), name
    assert p.loss == pytest.approx(loss, rel=1e-6), name


def test_nan_loss_is_reported_as_nan_and_marked_diverged():
    lines = [f"step {s}/1000 loss {v} time/step 0.2s" for s, v in ((100, "2.31"), (110, "nan"), (120, "nan"))]
    p = MetricTracker().track(lines)
    assert p.step == 120 and math.isnan(p.loss) and p.diverged
    ok = MetricTracker().track(lines[:1])
    assert ok.loss == pytest.approx(2.31) and not ok.diverged


def test_epoch_summaries_do_not_replace_finer_progress():
    lines = [f"epoch 2 step {s}/800 loss 0.5 time/step 0.2s" for s in (600, 700, 800)] + ["Epoch 2: loss=0.49"]
    p = MetricTracker().track(lines)
    assert p.step is not None and p.step > 2


def test_hugging_face_dicts_without_step_still_give_only_the_loss():
    lines = [" 40%|████      | 400/1000 [01:00<01:30,  6.60it/s]", "{'loss': 0.4123, 'learning_rate': 3e-05, 'epoch': 0.8}"]
    p = MetricTracker().track(lines)
    assert (p.step, p.total_steps) == (400, 1000) and p.loss == pytest.approx(0.4123)


def test_two_bracket_pairs_and_a_header_total():
    head = ["  Num Epochs = 4", "  Total optimization steps = 800"]
    lines = head + [f"| [{e:>4}/   4][{s:>6}/   800] | {b:>4}/811 batches | ms/batch 5.1 | train_loss {v}"
                    for e, s, b, v in ((1, 100, 400, "4.1e-01"), (2, 200, 11, "3.0e-01"))]
    p = MetricTracker().track(lines)
    assert (p.step, p.total_steps) == (200, 800) and p.loss == pytest.approx(0.3)
    per_epoch = [f"[{e}/20][{s}/7000] Loss: {v}" for e, s, v in ((2, 4000, "8.1"), (2, 4001, "9.2"))]
    p = MetricTracker().track(per_epoch)  # no header total: the pair counts the epoch
    assert p.step == 7000 + 4001 and p.loss == pytest.approx(9.2)


def test_an_evaluation_summary_with_train_and_val_loss_is_not_progress():
    lines = ["iter 230: loss 1.7159, time 894.08ms", "iter 240: loss 1.6524, time 895.31ms",
             "step 250: train loss 1.5440, val loss 1.7220"]
    p = MetricTracker().track(lines)
    assert p.step == 240 and p.loss == pytest.approx(1.6524)


def test_a_sanity_bar_without_epoch_does_not_decide_the_epoch_base_or_the_total():
    lines = ["Training:   0%|          | 0/30 [00:00<?, ?it/s]"] + [
        f"Epoch 0:  {s * 3}%|#   | {s}/30 [00:{s:02d}<01:00,  2.10s/it, loss={v}, v_num=7]" for s, v in ((3, 5.5), (4, 5.2))]
    p = MetricTracker().track(lines)
    assert p.step == 4 and p.total_steps is None and p.loss == pytest.approx(5.2)


# --- realsets batch 4 (held-out misses, then fixed): shapes of Keras, YOLO, OpenPCDet/timm, HF widgets ---

def test_keras_finished_epoch_bars_with_val_metrics_count_epochs_times_steps():
    lines = []
    for e in range(1, 4):
        lines += [f"Epoch {e}/30", f"250/250 [==============================] - 31s 124ms/step - loss: {1.5 - e / 10:.4f} "
                  f"- acc: 0.7 - val_loss: 0.9 - val_acc: 0.6"]
    p = MetricTracker().track(lines)
    assert (p.step, p.total_steps) == (750, 7500) and p.loss == pytest.approx(1.2)


def test_keras_old_style_bar_with_only_seconds_and_a_quoted_epoch_header():
    p = MetricTracker().track(["`Epoch 1/5", "40/40 [==============================] - 3s - loss: 0.8125 - acc: 0.5"])
    assert (p.step, p.total_steps) == (40, 200) and p.loss == pytest.approx(0.8125)


def test_yolo_rows_without_pipes_take_the_total_loss_column_and_skip_the_map_bar():
    head = "     Epoch   gpu_mem       box       obj       cls     total    labels  img_size"
    lines = [head, "      0/9     3.10G    0.0510    0.0300   0.01000    0.0910        20       640: 100% 120/120 [01:00<00:00,  2.0it/s]",
             "", head, "      1/9     3.10G    0.0410    0.0250   0.00800    0.0740        18       640: 100% 120/120 [01:00<00:00,  2.0it/s]",
             "               Class      Images      Labels           P           R      mAP@.5  mAP@.5:.95: 100% 30/30 [00:05<00:00,  6.0it/s]",
             "                 all         480        1900        0.51        0.44        0.40        0.21"]
    p = MetricTracker().track(lines)
    assert (p.step, p.total_steps) == (240, 1200) and p.loss == pytest.approx(0.074)


def test_a_bar_cut_short_by_the_poster_still_gives_the_step():
    head = "Epoch   gpu_mem       box       obj       cls     total   targets  img_size"
    p = MetricTracker().track([head, "     2/99    1.20G   0.06000   0.01500  0.009000   0.08400        31       640: 100%|█| 50/50 [00:12<00:"])
    assert (p.step, p.total_steps) == (150, 5000) and p.loss == pytest.approx(0.084)


def test_openpcdet_style_train_line_with_a_one_based_epoch_pair():
    lines = [f"2024-02-01 10:00:0{i}   INFO  Train:    2/4 ( 50%) [ {s:3d}/200 ( {s // 2}%)]  Loss: {9 - i:.2f} (12.0)  "
             f"LR: 1.000e-04  Acc_iter {200 + s + 1}" for i, s in enumerate((49, 99, 149))]
    p = MetricTracker().track(lines)
    assert (p.step, p.total_steps) == (349, 800) and p.loss == pytest.approx(7.0)


def test_step_less_hf_dicts_after_line_numbers_or_with_quoted_numbers_give_the_loss():
    numbered = [f"{i:2d} {{'loss': {0.9 - i / 100:.4f}, 'learning_rate': 2e-05, 'epoch': {i / 10}}}" for i in range(1, 6)]
    quoted = [f"{{'loss': '{0.8 - i / 100:.4f}', 'grad_norm': '0.7', 'epoch': '{i / 10}'}}" for i in range(1, 6)]
    assert MetricTracker().track(numbered).loss == pytest.approx(0.85)
    assert MetricTracker().track(quoted).loss == pytest.approx(0.75)


def test_the_notebook_widget_text_gives_the_run_total():
    lines = ["HBox(children=(FloatProgress(value=0.0, description='Epoch', max=2.0, style=ProgressStyle(descri…",
             "HBox(children=(FloatProgress(value=0.0, description='Iteration', max=4000.0, style=ProgressStyle(de…",
             '{"loss": 5.5, "learning_rate": 4e-05, "epoch": 0.1, "step": 400}']
    p = MetricTracker().track(lines)
    assert (p.step, p.total_steps) == (400, 4000)


def test_trainer_log_records_with_null_eval_fields_are_training_and_the_last_known_loss_is_kept():
    rec = ('{{"current_steps": {s}, "total_steps": 500, "loss": {l}, "eval_loss": null, "learning_rate": 1e-05, '
           '"epoch": 1.0, "percentage": 99.0}}')
    lines = [rec.format(s=480, l="2.31"), rec.format(s=490, l="2.29"), rec.format(s=500, l="null")]
    p = MetricTracker().track(lines)
    assert (p.step, p.total_steps) == (500, 500) and p.loss == pytest.approx(2.29)


def test_hf_dicts_after_a_host_prefix_and_a_prefixed_loss_name():
    hosts = [f"10.0.0.{h}: {{'loss': {0.7 - i / 100:.4f}, 'learning_rate': 5e-05, 'epoch': 0.0}}" for i in range(3) for h in (1, 2)]
    assert MetricTracker().track(hosts).loss == pytest.approx(0.68)
    logger = [f"[02:0{i}:00.000000] Epoch: [0]  [{i * 10}/800]  lr: 0.000030  closs: {1.2 - i / 10:.4f} (1.3000)  "
              f"time: 4.5  data: 0.0002" for i in range(1, 4)]
    p = MetricTracker().track(logger)
    assert p.step == 30 and p.loss == pytest.approx(0.9)


def test_deepspeed_log_dist_steps_without_a_loss():
    lines = [f"[2024-01-01 10:00:{i:02d},000] [INFO] [logging.py:69:log_dist] [Rank 0] step={i * 10}, skipped=0, "
             f"lr=[5e-05], mom=[[0.9, 0.999]]" for i in range(1, 4)]
    p = MetricTracker().track(lines)
    assert p.step == 30 and p.loss is None


def test_glued_records_and_a_header_steps_per_epoch():
    rec = "[2024/01/01 10:0{m}:00] root INFO: epoch: [1/40], iter: {i}, lr: 0.001000, loss: {l}, reader_cost: 0.1 s"
    glued = " ".join(rec.format(m=k, i=100 + 10 * k, l=f"{2.0 - k / 10:.6f}") for k in range(4))
    p = MetricTracker().track(["[2024/01/01 09:59:00] root INFO: train dataloader has 250 iters", glued])
    assert (p.step, p.total_steps) == (130, 10000) and p.loss == pytest.approx(1.7)
