"""The Metric Tracker's role grammar (models/schedmate/records.py): progress records in shapes no
format rule was written for, read by the role of each name (step / epoch / total / loss). Fixtures are
our own, in the shapes public logs take (issue 25, item 1: the tracker scored 73 % step / 65 % loss at
first sight on every new batch of real logs because each family needed its own rule)."""
from __future__ import annotations

import math

import pytest

from models.schedmate.records import read_fields, role, table_header
from models.schedmate.tracker import MetricTracker


@pytest.mark.parametrize("lines, step, total, loss", [
    ([f"INFO run | ep 1 | global_step={i} | train_loss={3 - i / 100:.3f} | lr 1e-4" for i in range(1, 6)], 5, None, 2.95),
    ([f"[Iter {i * 10}/1000] LOSS: 0.2{i} ACC 0.9" for i in range(1, 4)], 30, 1000, 0.23),
    (["it 10/200, loss=3.14"], 10, 200, 3.14),
    ([f"| update {i} | loss 4.{i} | wps 1000" for i in range(1, 5)], 4, None, 4.4),
    (['{"train/global_step": %d, "train/loss": 0.%d, "_runtime": 3.4}' % (i, i) for i in range(1, 6)], 5, None, 0.5),
    (["| Epoch | Step | Train Loss | LR |", "|---|---|---|---|"] + [f"| 1 | {i * 50} | 0.{i}1 | 1e-4 |" for i in range(1, 5)],
     200, None, 0.41),
    (["epoch  iter  loss  lr"] + [f"3  {i * 100}  0.{i}5  0.001" for i in range(1, 4)], 300, None, 0.35),
    (["Step\tTraining Loss\tValidation Loss", "500\t1.2300\t1.1000", "1000\t0.9800\t0.9500"], 1000, None, 0.98),
    (["{&quot;epoch&quot;: 1, &quot;update&quot;: 0.5, &quot;loss&quot;: &quot;6.1&quot;, &quot;num_updates&quot;: &quot;700&quot;}"],
     700, None, 6.1),
])
def test_unseen_shapes_are_read_by_the_roles_of_their_names(lines, step, total, loss):
    p = MetricTracker().track(lines)
    assert (p.step, p.total_steps) == (step, total)
    assert p.loss == pytest.approx(loss)


def test_epoch_and_unnamed_pair_give_the_global_step_with_the_epoch_base_of_the_first_record():
    lines = [f"Epoch: [{e}][{s}/500]  Time 0.3  Loss 1.{s // 100}" for e in (0, 1) for s in (100, 400)]
    p = MetricTracker().track(lines)
    assert (p.step, p.loss) == (1 * 500 + 400, pytest.approx(1.4))


def test_names_are_roles_and_evaluation_or_bare_counts_are_not_progress():
    assert [role(n) for n in ("train/global_step", "Train Loss", "val_loss", "eval/loss", "cls_loss", "batch_size")] == \
        ["step", "loss", None, None, "loss2", None]
    assert read_fields("oldest step 3000 removed") is None            # a count without a loss or a time
    assert read_fields("batch 32, loss 0.3") is None                  # a batch size, not a step
    assert read_fields("loss 0.3") is None                            # a loss without a count
    assert table_header("| Epoch | Step | Loss |") == ["epoch", "step", "loss"]
    assert table_header("| Name | Type | Params |") is None
    p = MetricTracker().track([f"step {i}: objective = nan" for i in range(1, 5)])
    assert p.step == 4 and math.isnan(p.loss) and p.diverged


@pytest.mark.parametrize("lines, step, total, loss", [
    # names glued to their numbers ("iters:12,"), a cross-entropy printed as the loss
    ([f"iters:{i}, train acc:0.5, train loss:{40 + i}.5, train loss aux:9.0," for i in range(10, 13)], 12, None, 52.5),
    ([f"[INFO] Step {s}/9000; acc: 40.1; ppl: 30.2; xent: 3.{s // 100}; lr: 0.0003; 900/80 tok/s; 80 sec"
      for s in (100, 200, 300)], 300, 9000, 3.3),
    (["Epoch  2, 150/400; acc: 5.0; ppl: 900.1; xent: 6.80; 20 s elapsed"], 550, None, 6.8),
    # a "Training ..." record carrying a stale val_ metric, a loss only the grammar names
    (["Training epoch 0, iteration 7/49 | global_step: 7 | reduced_train_loss: 2.25 | val_loss: 3.0"], 7, 49, 2.25),
    # numbers named by the word after them: the first epoch's batch range
    (["host 1epoch:train:1-300batch: iter_time=0.1, loss=9.5", "host 1epoch:train:301-600batch: iter_time=0.1, loss=8.5"],
     600, None, 8.5),
    # a nested metric record {"name": "loss", "value": ...}
    (['{"name": "loss", "data": {"epoch": 0.1, "step": 3, "value": 1.5}}'] * 2, 3, None, 1.5),
    # an outer bar counting epochs after the inner step bars
    ([f"Epoch {e}: 100%|##| 50/50 [00:10<00:00, 5.0batch/s, loss={e}.25]" for e in (0, 1)] +
     ["Run: 100%|####| 2/2 [00:20<00:00, 10.00s/epoch]"], 100, 100, 1.25),
])
def test_tuned_shapes_of_batch_9(lines, step, total, loss):
    p = MetricTracker().track(lines)
    assert (p.step, p.total_steps) == (step, total)
    assert p.loss == pytest.approx(loss)


def test_records_printed_one_name_per_line_and_the_whole_run_count_wins():
    block = ["-" * 30, "| rollout/        |        |", "|    mean_len     | 50     |", "| time/           |        |",
             "|    iterations   | 4      |", "|    total_timesteps | 8192 |", "| train/          |        |",
             "|    entropy_loss | -1.1   |", "|    loss         | 0.75   |", "|    n_updates    | 40     |", "-" * 30]
    p = MetricTracker().track(["|    loss         | 9.0   |", "|    n_updates    | 30    |", "-" * 30] + block)
    assert (p.step, p.loss) == (8192, 0.75)


def test_boxes_drawn_with_box_characters_bullet_lists_and_metric_paths():
    """Held-out misses of batches 10-11, fixed by general rules: a result box drawn with `│`/`─` is read
    like an ASCII one; `- name: value` bullets form a record, with the count from a title line ending
    in ":" right above them; a metric path whose component is a loss (`loss/train/total`) names the
    loss, an evaluation path does not; a list with a loss and no count anywhere still gives the loss."""
    box = ["\u256d" + "\u2500" * 30 + "\u256e", "\u2502 Trial fit_00001 result        \u2502", "\u251c" + "\u2500" * 30 + "\u2524"]
    box += [f"\u2502 {k:<20}{v:>9} \u2502" for k, v in (("time_this_iter_s", "0.2"), ("training_iteration", "12"),
                                                           ("loss", "0.413"))]
    box += ["\u2570" + "\u2500" * 30 + "\u256f"]
    p = MetricTracker().track(box)
    assert (p.step, p.loss) == (12, 0.413)
    assert role("loss/train/total") == "loss" and role("Train_loss/train/total") == "loss"
    assert role("loss/val/total") is None and role("metrics/eval/loss") is None
    titled = []
    for i in (1, 2):
        titled += [f"[step={i * 100}/900]:", "- Train mem/used_gb: 7.5", f"- Train loss/train/total: {3 - i / 10:.2f}"]
    p = MetricTracker().track(titled)
    assert (p.step, p.total_steps, p.loss) == (200, 900, 2.8)
    p = MetricTracker().track(["- Train mem/used_gb: 7.5", "- Train loss/train/total: 9.25", "- Train throughput: 3.1"])
    assert (p.step, p.loss) == (None, 9.25)


@pytest.mark.parametrize("lines, step, total, loss", [
    # carriage returns pasted in caret notation: the bar and the dict after it are separate records
    (["^M  3%|2 | 39/900 [00:59<20:01, 1.2s/it]^M  3%|2 | 40/900 [01:00<20:00, 1.2s/it]^M          "
      "^M{'loss': 0.75, 'learning_rate': 1e-4, 'epoch': 0.04}"], 40, 900, 0.75),
    # Keras `verbose=2`: the epoch's line has no bar
    (["Epoch 1/8", "200/200 - 31s - loss: 1.2500 - acc: 0.61", "Epoch 2/8", "200/200 - 30s - loss: 0.9000 - acc: 0.70"],
     400, 1600, 0.9),
    # a later "valid step" line is evaluation, not training progress
    (["INFO: epoch:2   train step:40   loss: 3.2500 lr: 0.1", "INFO: END epoch:2   train loss:  3.4000",
      "INFO: valid step:40   loss: 900.5000"], 40, None, 3.25),
    # a metric writer's record: an unnamed bracketed step, then name=value items
    (["I0101 10:00:00.000 1 writer.py:35] [300] steps_per_second=2.5, train_accuracy=0.4, train_loss=1.75"], 300, None, 1.75),
    # a record the console wrapped onto a deeper-indented line
    (["[10:00:01] INFO     trainer: Training, Epoch: 0, Step: 7, Loss: part_a=1.5 part_b=2.0",
      "                             part_c=0.25 loss=42.5 aux=0.1"], 7, None, 42.5),
    # a loss named before its split, with a parenthesised qualifier
    (["Ep 1 | step 12: loss train (curr): 1.375, val (prev): None | iter time: 150.0 ms"], 12, None, 1.375),
])
def test_tuned_shapes_of_batch_12(lines, step, total, loss):
    """Batch-12 misses (scored once held-out first), fixed by general rules; fixtures our own."""
    p = MetricTracker().track(lines)
    assert (p.step, p.total_steps) == (step, total)
    assert p.loss == pytest.approx(loss)


def test_yolo_rows_without_a_total_column_and_one_based_epochs_from_the_configured_count():
    """A YOLO row whose header names only loss parts gives their sum as the loss; when the run's
    configured epochs equal the printed denominator ("epochs=50", "12/50") the epochs count from 1."""
    head = "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size"
    row = "      12/50      3.1G      1.25     0.5       1.0          7        640: 100%|##########| 20/20 [00:05<00:00,  3.9it/s]"
    p = MetricTracker().track(["trainer: task=detect, mode=train, epochs=50, batch=16", head, row])
    assert (p.step, p.total_steps) == (240, 1000)
    assert p.loss == pytest.approx(2.75)
    # no configured count: a round denominator ("12/50") is a configured count printed 1-based (YOLOv8);
    # YOLOv5 prints its last 0-based index ("12/49" for 50 epochs), and a run that shows epoch 0 counts from 0
    p = MetricTracker().track([head, row])
    assert (p.step, p.total_steps) == (240, 1000)
    p = MetricTracker().track([head, row.replace("12/50", "12/49")])
    assert (p.step, p.total_steps) == (260, 1000)
    zero = row.replace("12/50", " 0/50").replace("20/20", " 5/20")
    p = MetricTracker().track([head, zero, head, row.replace("12/50", " 1/50")])
    assert (p.step, p.total_steps) == (40, 1020)
