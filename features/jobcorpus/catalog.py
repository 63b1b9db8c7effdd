"""Model families of the synthetic job corpus: SchedMate's Table 2 kinds of workloads (vision CNNs and
transformers, BERT-style fine-tuning, GPT / LLaMA pre-training and fine-tuning, translation, detection,
speech, recommendation, RL, GANs, point clouds) and every model of the profile catalog
(sim/profiles.py CATALOGS: Lazer's and Lucid's models).

Each family lists the surface names people write for it (torchvision / timm / Hugging Face / plain),
which the generator picks from; the extractor must map them back to the canonical `key`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

#: dataset canonical name -> (train samples, surface names as written in code / configs / argv)
DATASETS: dict[str, tuple[int, tuple[str, ...]]] = {
    "imagenet": (1281167, ("imagenet", "ImageNet", "imagenet-1k", "ILSVRC2012", "/datasets/imagenet")),
    "cifar10": (50000, ("cifar10", "CIFAR10", "cifar-10")),
    "cifar100": (50000, ("cifar100", "CIFAR100", "cifar-100")),
    "coco": (118287, ("coco", "COCO", "coco2017", "CocoDataset")),
    "ade20k": (20210, ("ade20k", "ADE20K", "ADE20KDataset")),
    "glue-sst2": (67349, ("sst2", "glue/sst2", "SST-2")),
    "glue-mnli": (392702, ("mnli", "glue/mnli", "MNLI")),
    "squad": (87599, ("squad", "SQuAD", "squad_v1")),
    "wikitext-103": (1801350, ("wikitext-103", "wikitext-103-raw-v1", "WikiText103")),
    "wikitext-2": (36718, ("wikitext-2", "wikitext-2-raw-v1", "WikiText2")),
    "openwebtext": (8013769, ("openwebtext", "OpenWebText", "/data/openwebtext")),
    "alpaca": (52002, ("alpaca", "tatsu-lab/alpaca", "alpaca_data.json")),
    "wmt14-en-de": (4508785, ("wmt14", "wmt14_en_de", "wmt14-en-de")),
    "cnn-dailymail": (287113, ("cnn_dailymail", "cnn-dailymail", "CNN/DailyMail")),
    "librispeech": (281241, ("librispeech", "LibriSpeech", "librispeech_asr")),
    "movielens-1m": (994169, ("ml-1m", "movielens-1m", "MovieLens1M")),
    "atari-breakout": (1, ("BreakoutNoFrameskip-v4", "ALE/Breakout-v5")),
    "mujoco-halfcheetah": (1, ("HalfCheetah-v4", "HalfCheetah-v2")),
    "celeba": (202599, ("celeba", "CelebA", "img_align_celeba")),
    "modelnet40": (9843, ("modelnet40", "ModelNet40", "modelnet40_normal_resampled")),
    "laion-aesthetics": (600000, ("laion-aesthetics", "laion/aesthetics_v2_6.5plus")),
}


@dataclass(frozen=True)
class Family:
    key: str                       # canonical model id (what the extractor must return)
    catalog: str | None            # name in the profile catalog (sim/profiles.py), if any
    task: str                      # canonical task type
    datasets: tuple[str, ...]
    names: dict[str, tuple[str, ...]]  # source -> surface names ("tv", "timm", "hf", "plain", "mm")
    unit: str                      # "epochs" or "steps"
    iterations: tuple[int, ...]    # typical values in `unit`
    batch: tuple[int, ...]         # per-device batch sizes
    gpus: tuple[int, ...]          # GPUs per node choices
    step_time: tuple[float, float]  # seconds per step on one node (range)
    gpu_util: tuple[float, float]  # percent
    styles: tuple[str, ...]
    max_nodes: int = 1
    extra: dict = field(default_factory=dict)


_V = ("argparse", "hydra", "json", "lightning", "launcher")
FAMILIES: tuple[Family, ...] = (
    Family("resnet18", "ResNet18", "image-classification", ("cifar10", "imagenet", "cifar100"),
           {"tv": ("resnet18",), "timm": ("resnet18",), "hf": ("microsoft/resnet-18",), "plain": ("ResNet-18", "ResNet18")},
           "epochs", (30, 90, 100, 200), (128, 256), (1, 2, 4), (0.05, 0.15), (55, 80), _V),
    Family("resnet50", "ResNet50", "image-classification", ("imagenet", "cifar100"),
           {"tv": ("resnet50",), "timm": ("resnet50", "resnet50.a1_in1k"), "hf": ("microsoft/resnet-50",),
            "plain": ("ResNet-50", "ResNet50")},
           "epochs", (90, 100, 120), (64, 128, 256), (4, 8), (0.2, 0.45), (75, 95), _V, max_nodes=4),
    Family("vgg16", "VGG", "image-classification", ("imagenet", "cifar10"),
           {"tv": ("vgg16", "vgg16_bn"), "timm": ("vgg16",), "plain": ("VGG-16", "VGG16")},
           "epochs", (74, 90), (64, 128), (2, 4, 8), (0.3, 0.6), (80, 97), _V),
    Family("vgg19", "VGG19", "image-classification", ("imagenet", "cifar100"),
           {"tv": ("vgg19", "vgg19_bn"), "timm": ("vgg19",), "plain": ("VGG-19", "VGG19")},
           "epochs", (74, 90), (64, 128), (4, 8), (0.35, 0.7), (82, 97), _V),
    Family("efficientnet-b0", "EfficientNet", "image-classification", ("imagenet", "cifar10"),
           {"tv": ("efficientnet_b0",), "timm": ("efficientnet_b0", "tf_efficientnet_b0"),
            "hf": ("google/efficientnet-b0",), "plain": ("EfficientNet-B0", "EfficientNetB0")},
           "epochs", (90, 150, 350), (128, 256), (4, 8), (0.15, 0.35), (60, 85), _V),
    Family("mobilenet-v2", "MobileNetV2", "image-classification", ("imagenet", "cifar10"),
           {"tv": ("mobilenet_v2",), "timm": ("mobilenetv2_100",), "plain": ("MobileNetV2", "MobileNet-V2")},
           "epochs", (150, 300), (128, 256), (1, 2, 4), (0.06, 0.15), (45, 70), _V),
    Family("mobilenet-v3", "MobileNetV3", "image-classification", ("imagenet", "cifar100"),
           {"tv": ("mobilenet_v3_large",), "timm": ("mobilenetv3_large_100",), "plain": ("MobileNetV3", "MobileNetV3-Large")},
           "epochs", (150, 300), (128, 256), (1, 2, 4), (0.06, 0.14), (40, 68), _V),
    Family("convnext-base", "ConvNeXt", "image-classification", ("imagenet",),
           {"tv": ("convnext_base",), "timm": ("convnext_base",), "hf": ("facebook/convnext-base-224",),
            "plain": ("ConvNeXt-B", "ConvNeXt-Base")},
           "epochs", (300, 100), (64, 128), (8,), (0.4, 0.8), (85, 98), _V, max_nodes=4),
    Family("vit-base", "ViT", "image-classification", ("imagenet", "cifar10"),
           {"tv": ("vit_b_16",), "timm": ("vit_base_patch16_224",), "hf": ("google/vit-base-patch16-224",),
            "plain": ("ViT-B/16", "ViT-Base")},
           "epochs", (300, 90), (64, 128), (8,), (0.35, 0.7), (85, 98), _V, max_nodes=4),
    Family("swin-base", "SwinTransformer", "image-classification", ("imagenet",),
           {"tv": ("swin_b",), "timm": ("swin_base_patch4_window7_224",),
            "hf": ("microsoft/swin-base-patch4-window7-224",), "plain": ("Swin-B", "SwinTransformer-Base")},
           "epochs", (300,), (64, 128), (8,), (0.4, 0.8), (85, 98), _V, max_nodes=4),
    Family("tnt-small", "TNT", "image-classification", ("imagenet",),
           {"timm": ("tnt_s_patch16_224",), "plain": ("TNT-S", "TNT-Small")},
           "epochs", (300,), (64, 128), (8,), (0.4, 0.7), (80, 95), ("argparse", "hydra", "lightning", "json")),
    Family("bert-base", "BERT", "text-classification", ("glue-sst2", "glue-mnli"),
           {"hf": ("bert-base-uncased", "bert-base-cased", "google-bert/bert-base-uncased"), "plain": ("BERT-base",)},
           "epochs", (3, 4, 5), (16, 32), (1, 2, 4, 8), (0.12, 0.3), (70, 92), ("hf", "launcher", "json", "lightning")),
    Family("bert-large", "BERT", "question-answering", ("squad",),
           {"hf": ("bert-large-uncased-whole-word-masking", "google-bert/bert-large-uncased"), "plain": ("BERT-large",)},
           "epochs", (2, 3), (12, 24), (4, 8), (0.4, 0.8), (85, 97), ("hf", "launcher")),
    Family("roberta-large", None, "text-classification", ("glue-mnli", "glue-sst2"),
           {"hf": ("roberta-large", "FacebookAI/roberta-large"), "plain": ("RoBERTa-large",)},
           "epochs", (3, 10), (16, 32), (4, 8), (0.35, 0.7), (85, 97), ("hf", "launcher")),
    Family("gpt2", "Transformer", "language-modeling", ("openwebtext", "wikitext-103"),
           {"hf": ("gpt2", "openai-community/gpt2"), "plain": ("GPT-2", "gpt2-small")},
           "steps", (50000, 100000, 600000), (8, 12, 16), (8,), (0.3, 0.6), (88, 99),
           ("hf", "launcher", "megatron", "argparse"), max_nodes=4),
    Family("gpt2-medium", "Transformer", "language-modeling", ("openwebtext", "wikitext-103"),
           {"hf": ("gpt2-medium", "openai-community/gpt2-medium"), "plain": ("GPT-2 Medium", "gpt2-345m")},
           "steps", (100000, 300000), (4, 8), (8,), (0.6, 1.1), (90, 99), ("hf", "launcher", "megatron"), max_nodes=8),
    Family("llama-2-7b", None, "language-modeling", ("alpaca", "openwebtext"),
           {"hf": ("meta-llama/Llama-2-7b-hf", "NousResearch/Llama-2-7b-hf"), "plain": ("LLaMA-2-7B", "llama2-7b")},
           "steps", (1000, 3000, 20000), (1, 2, 4), (8,), (1.5, 3.5), (90, 99), ("hf", "launcher", "megatron"), max_nodes=8),
    Family("t5-base", None, "summarization", ("cnn-dailymail",),
           {"hf": ("t5-base", "google-t5/t5-base"), "plain": ("T5-base",)},
           "epochs", (3, 5, 10), (8, 16), (4, 8), (0.3, 0.6), (80, 95), ("hf", "launcher", "json")),
    Family("transformer-base", "Transformer", "translation", ("wmt14-en-de",),
           {"plain": ("transformer_wmt_en_de", "Transformer-base", "transformer")},
           "steps", (100000, 300000), (32, 64), (8,), (0.3, 0.5), (80, 95), ("argparse", "json", "hydra")),
    Family("lstm-lm", "LSTM", "language-modeling", ("wikitext-2",),
           {"plain": ("lstm", "LSTM", "lstm-lm")},
           "epochs", (40, 60), (20, 32), (1,), (0.02, 0.06), (25, 55), ("argparse", "json")),
    Family("dcgan", "DCGAN", "image-generation", ("celeba",),
           {"plain": ("dcgan", "DCGAN")},
           "epochs", (25, 50), (64, 128), (1, 2), (0.03, 0.08), (30, 60), ("argparse", "json", "hydra")),
    Family("neumf", "NeuMF", "recommendation", ("movielens-1m",),
           {"plain": ("neumf", "NeuMF", "ncf")},
           "epochs", (20, 30, 50), (256, 1024), (1,), (0.01, 0.04), (15, 40), ("argparse", "json")),
    Family("ppo", "PPO", "reinforcement-learning", ("atari-breakout", "mujoco-halfcheetah"),
           {"plain": ("ppo", "PPO")},
           "steps", (1000000, 10000000), (64, 256), (1,), (0.002, 0.006), (8, 25), ("argparse", "hydra")),
    Family("td3", "TD3", "reinforcement-learning", ("mujoco-halfcheetah",),
           {"plain": ("td3", "TD3")},
           "steps", (1000000, 3000000), (100, 256), (1,), (0.003, 0.008), (8, 20), ("argparse", "hydra")),
    Family("pointnet", "PointNet", "point-cloud-classification", ("modelnet40",),
           {"plain": ("pointnet", "PointNet", "pointnet_cls")},
           "epochs", (200, 250), (24, 32), (1, 2), (0.05, 0.12), (35, 65), ("argparse", "json", "hydra")),
    Family("conformer", "Conformer", "speech-recognition", ("librispeech",),
           {"hf": ("conformer-large",), "plain": ("Conformer-L", "conformer")},
           "epochs", (50, 100), (16, 32), (8,), (0.5, 0.9), (80, 95), ("argparse", "hydra", "launcher"), max_nodes=2),
    Family("faster-rcnn-r50", None, "object-detection", ("coco",),
           {"mm": ("FasterRCNN",), "plain": ("faster_rcnn_r50_fpn", "Faster R-CNN R50-FPN")},
           "epochs", (12, 24, 36), (2, 4), (8,), (0.3, 0.6), (70, 90), ("mmengine",)),
    Family("segformer-b2", None, "semantic-segmentation", ("ade20k",),
           {"mm": ("EncoderDecoder",), "plain": ("segformer_mit-b2", "SegFormer-B2")},
           "steps", (160000, 80000), (2, 4), (8,), (0.3, 0.5), (70, 92), ("mmengine",)),
    Family("stable-diffusion-1.5", None, "image-generation", ("laion-aesthetics",),
           {"hf": ("runwayml/stable-diffusion-v1-5", "stable-diffusion-v1-5/stable-diffusion-v1-5"),
            "plain": ("Stable Diffusion v1.5", "sd15")},
           "steps", (15000, 50000), (4, 8), (8,), (1.0, 1.8), (92, 99), ("launcher", "hf")),
)

FAMILY_BY_KEY = {f.key: f for f in FAMILIES}
STYLES = ("argparse", "hydra", "json", "hf", "lightning", "launcher", "megatron", "mmengine")
