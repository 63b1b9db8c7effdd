"""Normalisation of model, dataset and task names as people write them (torchvision, timm, Hugging
Face hub ids, mmengine types, free text) to canonical ids, so that "vit_base_patch16_224",
"google/vit-base-patch16-224" and "ViT-B/16" are one model. Unknown names are kept, normalised."""
from __future__ import annotations

import re
from functools import lru_cache

# (pattern over the normalised name, canonical id); first match wins, so specific before generic
MODEL_RULES: tuple[tuple[str, str], ...] = (
    (r"stable-?diffusion|(^|-)sd-?(v)?1-?5($|-)", "stable-diffusion-1.5"),
    (r"(^|-)(segformer|mit)-?(b[013456])($|-)", "segformer-\\3"),  # the MiT size names the SegFormer size
    (r"segformer|mit-b2|mixvisiontransformer", "segformer-b2"),
    (r"faster-?rcnn", "faster-rcnn-r50"),
    (r"mask-?rcnn", "mask-rcnn-r50"),
    (r"mask-?2-?former|maskformer-?2", "mask2former"),
    (r"(^|-)maskformer", "maskformer"),
    (r"transformer.*(wmt|vaswani).*big|transformer-?big", "transformer-big"),
    (r"llama-?2-?7b|llama2-?7b", "llama-2-7b"),
    (r"(^|-)llama-?7b", "llama-7b"),  # LLaMA-1 7B: another model than LLaMA-2 7B
    (r"gpt-?2-?(medium|345m)", "gpt2-medium"),
    (r"(^|-)gpt-?2($|-small|-124m)", "gpt2"),
    (r"(^|-)pythia-?(\d+m|\d+(?:-\d+)?b)($|-)", "pythia-\\2"),
    (r"(^|-)phi-?([1-4](?:-5)?)($|-)", "phi-\\2"),
    (r"roberta-?large", "roberta-large"),
    # Google's BERT checkpoints are folders named by shape: uncased_L-24_H-1024_A-16 is BERT-Large
    (r"(^|-)l-?24-h-?1024-a-?16($|-)", "bert-large"),
    (r"(^|-)l-?12-h-?768-a-?12($|-)", "bert-base"),
    (r"bert-?large", "bert-large"),
    (r"(^|-)bert-?base|(^|-)bert($|-uncased|-cased)", "bert-base"),
    (r"(^|-)t5-?base", "t5-base"),
    (r"conformer", "conformer"),
    (r"(^|-)lstm", "lstm-lm"),
    (r"dcgan", "dcgan"),
    (r"neumf|(^|-)ncf($|-)", "neumf"),
    (r"(^|-)ppo2?($|-)", "ppo"),
    (r"(^|-)(deepq|dqn)($|-)", "dqn"),
    (r"(^|-)sac($|-)", "sac"),
    (r"(^|-)td3($|-)", "td3"),
    # other reinforcement-learning algorithms, as script or --algo names (c51.py, ddpg_continuous_action.py)
    (r"(^|-)(c51|ddpg|a2c|a3c|trpo|ppg|rpo|pqn|rainbow|qdagger|impala|cql|iql|her)($|-)", "\\2"),
    (r"pointnet", "pointnet"),
    (r"(^|-)tnt-?(s|small)", "tnt-small"),
    (r"swin-?(b|base)($|-)|swin-?transformer-?base|^swin-?b$", "swin-base"),
    (r"convnext-?(b|base)($|-)", "convnext-base"),
    # MAE's encoders are ViTs trained by masked autoencoding: their own ids, before the plain ViT rules
    (r"(^|-)mae-vit-?(l|large)($|-)", "mae-vit-large"),
    (r"(^|-)mae-vit-?(b|base)($|-)", "mae-vit-base"),
    (r"(^|-)mae-vit-?(h|huge)($|-)", "mae-vit-huge"),
    # ViT's own short names (B/16, S/16, L/14): whole names only
    (r"^(vit-)?b-?(8|16|32)$", "vit-base"),
    (r"^(vit-)?s-?(8|16|32)$", "vit-small"),
    (r"^(vit-)?l-?(14|16|32)$", "vit-large"),
    (r"^(vit-)?h-?14$", "vit-huge"),
    (r"(^|-)(mlp-)?mixer($|-)", "mlp-mixer"),
    (r"(^|-)vit-?(b|base)($|-)", "vit-base"),
    (r"(^|-)vit-?(l|large)($|-)", "vit-large"),
    (r"(^|-)vit-?(h|huge)($|-)", "vit-huge"),
    (r"(^|-)vit-?(s|small)($|-)", "vit-small"),
    (r"mobilenet-?v?3", "mobilenet-v3"),
    (r"mobilenet-?v?2", "mobilenet-v2"),
    (r"efficientnet-?b0", "efficientnet-b0"),
    (r"(^|-)vgg-?19", "vgg19"),
    (r"(^|-)vgg-?16", "vgg16"),
    (r"(^|-)wide-?resnet-?(\d+)-(\d+)($|-)", "wide-resnet\\2-\\3"),  # WRN-50-2 is not ResNet-50
    (r"(^|-)resnet-?50($|-)", "resnet50"),
    (r"(^|-)resnet-?18($|-)", "resnet18"),
    (r"transformer-?(wmt|base)|^transformer$", "transformer-base"),
    # well-known generative methods by their names (a script, a config or an option names them): `~` marks where a
    # written name may have a separator the canonical id has not (acgan / ac_gan), `-` one it keeps (wgan-gp)
    *((rf"^{'-?'.join(re.escape(p) for p in re.split('[~-]', name))}$", name.replace("~", "")) for name in (
        "ac~gan", "c~gan", "info~gan", "ls~gan", "be~gan", "sa~gan", "wgan", "wgan-gp", "wgan-div", "cycle~gan",
        "pix2pix", "pix2pix~hd", "star~gan", "stargan-v2", "spade", "gau~gan", "munit", "disco~gan", "dual~gan",
        "sr~gan", "esr~gan", "big~gan", "biggan-deep", "pg~gan", "beta-vae", "beta-tc-vae", "vq-vae", "vq-vae-2",
        "iwae", "vanilla-vae", "cvae")),
    # classic architectures named without a size (torchvision's alexnet / googlenet, LeNet-5)
    (r"^(alexnet|googlenet|lenet(?:-?5)?|squeezenet(?:-?1-?[01])?|network-in-network|nin)$", "\\1"),
)

MODEL_TASK = {
    "stable-diffusion-1.5": "image-generation", "segformer-b2": "semantic-segmentation",
    "faster-rcnn-r50": "object-detection", "llama-2-7b": "language-modeling", "llama-7b": "language-modeling", "gpt2": "language-modeling",
    "gpt2-medium": "language-modeling", "roberta-large": "text-classification", "bert-base": "text-classification",
    "bert-large": "question-answering", "t5-base": "summarization", "conformer": "speech-recognition",
    "transformer-base": "translation", "transformer-big": "translation", "mask-rcnn-r50": "object-detection", "lstm-lm": "language-modeling", "dcgan": "image-generation",
    "neumf": "recommendation", "ppo": "reinforcement-learning", "td3": "reinforcement-learning",
    "pointnet": "point-cloud-classification",
    **{f"yolov{v}{s}": "object-detection" for v in "58" for s in "nsmlx"},
}

# model families whose task does not depend on the data they are trained on (a detector on any images
# detects; a diffusion transformer on ImageNet generates): read before the dataset's usual task
FAMILY_TASK: tuple[tuple[str, str], ...] = (
    (r"(^|-)(yolo\w*|(deformable-|conditional-|dab-|dn-|rt-?)?detr|(faster|mask|cascade)-?r-?cnn|retinanet|fcos|"
     r"centernet|rtmdet|efficientdet|atss|ssd\d*|cornernet)($|-|\d)", "object-detection"),
    (r"(^|-)(dit|stylegan\d?(-ada)?|dcgan|ddpm|ldm|vqgan|edm|consistency-model)($|-)", "image-generation"),
    (r"(^|-)(deeplab(-?v\d)?(\+|-?plus)?|segformer|pspnet|upernet|setr|fcn)($|-|\d)", "semantic-segmentation"),
    (r"(^|-)(wav2vec2?|hubert|whisper|conformer|deepspeech\d?)($|-)", "speech-recognition"),
    (r"(^|-)(real-?esr(gan|net)|esrgan|swinir|edsr|rcan|srgan|srresnet|rrdbnet)", "image-super-resolution"),
    (r"(^|-)(nafnet|restormer|mprnet|uformer|hinet)", "image-restoration"),
    (r"(^|-)(minigpt-?(\d|v\d)?|llava|open-?flamingo|flamingo|idefics\d?|qwen-?vl)($|-|\d)", "vision-language-modeling"),
)


def family_task(model: str | None) -> str | None:
    """The task a model family implies regardless of its data, or None."""
    if not model:
        return None
    return next((task for pat, task in FAMILY_TASK if re.search(pat, model)), None)


DATASET_RULES: tuple[tuple[str, str], ...] = (
    # well-known datasets by their common short forms (whole names or path segments only): c10 / c100, voc,
    # ptb, m30k; a longer name that contains a shorter one (fashion-mnist, tiny-imagenet) before it
    (r"^c-?10$", "cifar10"),
    (r"^c-?100$", "cifar100"),
    (r"(^|-)(fashion-?mnist|f-?mnist)($|-)", "fashion-mnist"),
    (r"(^|-)k-?mnist($|-)", "kmnist"),
    (r"(^|-)e-?mnist($|-)", "emnist"),
    (r"(^|-)tiny-?imagenet", "tiny-imagenet"),
    (r"(^|-)(pascal-?voc|voc-?devkit|voc-?(?:20(?:07|12))?(?:-?aug)?|pascal)($|-|20)", "pascal-voc"),
    (r"(^|-)(ptb-?char|penn-?char|char-?penn|penn-?treebank-?char)($|-)", "penn-treebank-char"),
    (r"(^|-)(ptb|penn-?tree-?bank|penn)($|-)", "penn-treebank"),
    (r"(^|-)(multi-?30k|m30k)($|-)", "multi30k"),
    (r"(^|-)lambada($|-)", "lambada"),
    (r"(^|-)text-?8($|-)", "text8"),
    (r"(^|-)svhn($|-)", "svhn"),
    (r"(^|-)(places-?365|places-?2)($|-)", "places365"),
    (r"(^|-)lsun($|-)", "lsun"),
    (r"(^|-)caltech-?(101|256)($|-)", "caltech\\2"),
    (r"(^|-)food-?101($|-)", "food101"),
    # Oxford's 102-category flowers under the name its authors publish it by (flowers102 is the torchvision class)
    (r"(^|-)(oxford-?)?flowers-?102($|-)|(^|-)oxford-?flowers($|-)", "oxford-flowers"),
    (r"(^|-)(oxford-?(iiit-?)?pets?|pets-?37)($|-)", "oxford-pets"),
    (r"(^|-)cub-?200(-?2011)?($|-)", "cub200"),
    (r"(^|-)stanford-?cars($|-)", "stanford-cars"),
    (r"(^|-)(inaturalist|inat)-?(20\d\d)?($|-)", "inaturalist"),
    (r"(^|-)kitti($|-)", "kitti"),
    (r"(^|-)nuscenes($|-)", "nuscenes"),
    (r"(^|-)camvid($|-)", "camvid"),
    (r"(^|-)lvis($|-)", "lvis"),
    (r"(^|-)objects-?365($|-)", "objects365"),
    (r"(^|-)(open-?images|oid)-?(v\d)?($|-)", "open-images"),
    (r"(^|-)market-?1501($|-)", "market1501"),
    (r"(^|-)(ms-?marco)($|-)", "ms-marco"),
    (r"(^|-)snli($|-)", "snli"),
    (r"(^|-)imdb($|-)", "imdb"),
    (r"(^|-)ag-?news($|-)", "ag-news"),
    (r"(^|-)book-?corpus($|-)", "bookcorpus"),
    (r"(^|-)(common-?voice)($|-)", "common-voice"),
    (r"(^|-)vctk($|-)", "vctk"),
    (r"(^|-)(esc-?50)($|-)", "esc50"),
    (r"(^|-)audio-?set($|-)", "audioset"),
    (r"(^|-)shapenet", "shapenet"),
    (r"(^|-)scannet($|-)", "scannet"),
    (r"(^|-)s3dis($|-)", "s3dis"),
    (r"(^|-)(cora|citeseer|pubmed)($|-)", "\\2"),
    (r"(^|-)(mj-?st|mjsynth-?synthtext)($|-)", "mjsynth-synthtext"),
    (r"(^|-)(mjsynth|synth-?90k)($|-)", "mjsynth"),
    (r"(^|-)wmt-?(15|1[7-9]|2\d)($|-)", "wmt\\2"),
    (r"(^|-)(facades|horse-?2-?zebra|edges-?2-?shoes|grumpify-?cat)($|-)", "\\2"),
    (r"(^|-)(?:kinetics-?|k-?)(400|600|700)($|-)", "kinetics-\\2"),  # (the variant kept where the name says it)
    (r"(^|-)kinetics($|-)", "kinetics"),  # (a family: resolve.py resolves the variant or lowers the answer)
    (r"(^|-)ucf-?101", "ucf101"),
    (r"(^|-)hmdb-?51", "hmdb51"),
    (r"imagenet-?2[12]k|(^|-)2[12]k$|(^|-)in-?2[12]k($|-)", "imagenet-22k"),
    (r"imagenet|ilsvrc|(^|-)imnet($|-)", "imagenet"),  # IMNET: DeiT-style --data-set choices
    (r"(^|-)mnist", "mnist"),
    (r"(^|-)enwik-?8", "enwik8"),
    (r"(^|-)(the-)?pile($|-)", "pile"),
    (r"(^|-)c4($|-)", "c4"),
    (r"(^|-)cc-?12m($|-)", "cc12m"),
    (r"(^|-)cc-?3m($|-)", "cc3m"),
    (r"(^|-)(glue-)?(mrpc|cola|qnli|rte|qqp|sts-?b)($|-)", "glue-\\3"),
    (r"(^|-)(sthv2|ssv2|something-?something-?v2|sth-?sth-?v2)($|-)", "something-something-v2"),
    (r"(^|-)(sthv1|ssv1|something-?something-?v1|sth-?sth-?v1)($|-)", "something-something-v1"),
    (r"^(something|something-?something|sth-?sth|sthsth)$", "something-something"),  # (a family of v1 / v2)
    (r"(^|-)chembl", "chembl"),  # (ChEMBL's filtered / supervised subsets: one database)
    (r"(^|-)zinc-?(12|15|20)($|-)", "zinc\\2"),
    (r"(^|-)zinc($|-)", "zinc"),  # (a family: ZINC12 / 15 / 20 and their subsets)
    (r"(^|-)flickr-?30k", "flickr30k"),
    (r"(^|-)sa-?1b($|-)", "sa-1b"),
    (r"(^|-)df2k($|-)", "df2k"),
    (r"(^|-)div2k($|-)", "div2k"),
    (r"(^|-)gopro($|-)", "gopro"),
    (r"(^|-)tiny-?shakespeare", "shakespeare"),
    (r"(^|-)(?<!edu-)fineweb(?!-?edu)(-?\d+[bmt])?($|-)", "fineweb"),
    (r"(^|-)stl-?10($|-)", "stl10"),
    (r"(^|-)i(32|64|128|256)-hdf5($|-)", "imagenet"),  # BigGAN's preprocessed ImageNet (`I128_hdf5`)
    (r"cifar-?100", "cifar100"),
    (r"cifar-?10", "cifar10"),
    (r"(^|-)coco-?(20\d\d-)?(train-)?stuff|cocostuff", "coco-stuff"),
    (r"(^|-)coco", "coco"),
    (r"cityscapes", "cityscapes"),
    (r"lj-?speech|(^|-)ljs-", "ljspeech"),
    (r"(^|-)(instances|person-keypoints|captions)-(train|val)20(14|17)($|-)", "coco"),  # COCO's annotation files
    (r"ade20k|(^|-)ade(-|$)|adechallenge", "ade20k"),
    (r"(^|-)sst-?2", "glue-sst2"),
    (r"(^|-)mnli", "glue-mnli"),
    (r"squad", "squad"),
    (r"wikitext-?103", "wikitext-103"),
    (r"wikitext-?2", "wikitext-2"),
    (r"openwebtext", "openwebtext"),
    (r"alpaca", "alpaca"),
    (r"wmt-?14", "wmt14-en-de"),
    (r"wmt-?16", "wmt16-en-de"),
    (r"cnn-?dailymail", "cnn-dailymail"),
    (r"librispeech", "librispeech"),
    # GroupLens's MovieLens releases by size; the short codes (ml-100k, ml-1m, ...) are GroupLens's own file names
    (r"(^|-)(ml|movielens)-?(100k|1m|10m|20m|25m|32m)($|-)", "movielens-\\3"),
    (r"(^|-)ml-?1m|movielens", "movielens-1m"),
    # the influenza-like-illness series of the long-horizon forecasting benchmarks (file national_illness.csv)
    (r"(^|-)national-?illness($|-)|^ili$", "ili"),
    # QM9 and its splits (a half, a subset for conditioning) are one dataset
    (r"(^|-)qm-?9($|-)", "qm9"),
    (r"breakout", "atari-breakout"),
    # simulator environments by their gym ids: Atari's NoFrameskip games, PyBullet's and MuJoCo's bodies
    (r"^([a-z]+)noframeskip-v\d+$", "atari-\\1"),
    (r"(^|-)([a-z0-9]+)bulletenv", "pybullet-\\2"),
    (r"halfcheetah", "mujoco-halfcheetah"),
    (r"^(humanoid|hopper|walker2d|ant|swimmer|reacher|humanoidstandup|invertedpendulum)-v\d+$", "mujoco-\\1"),
    (r"celeba-?hq", "celeba-hq"),
    (r"(^|-)ffhq($|-)", "ffhq"),
    (r"(^|-)afhq", "afhq"),
    (r"(^|-)sharegpt($|-)", "sharegpt"),
    # language-model corpora and fine-tuning sets as hub ids, folder and file names
    (r"slim-?pajama", "slimpajama"),
    (r"red-?pajama", "redpajama"),
    (r"(^|-)dolma($|-)", "dolma"),
    (r"refined-?web", "refinedweb"),
    (r"(^|-)samsum($|-)", "samsum"),
    (r"(^|-)dolly($|-)", "dolly"),
    (r"ultra-?chat", "ultrachat"),
    (r"(^|-)gsm-?8k($|-)", "gsm8k"),
    (r"fineweb-?edu|edu-?fineweb", "fineweb-edu"),
    (r"celeba", "celeba"),
    (r"modelnet-?40", "modelnet40"),
    # LAION's aesthetic subsets by name; a mixture that merely includes LAION (blip_laion_cc_sbu) is not one
    (r"laion.*aesthetic|aesthetic.*laion", "laion-aesthetics"),
    (r"(^|-)laion-?400m", "laion-400m"),
    (r"(^|-)laion-?2b", "laion-2b"),
    (r"^laion($|-)", "laion-aesthetics"),
    # any other gym / gymnasium id: the environment without its version (CartPole-v1 -> cartpole)
    (_GYM_ID := r"^([a-z][a-z0-9]*)-v\d+$", "\\1"),
)

DATASET_TASK = {
    "imagenet": "image-classification", "cifar10": "image-classification", "cifar100": "image-classification",
    "coco": "object-detection", "ade20k": "semantic-segmentation", "coco-stuff": "semantic-segmentation",
    "cityscapes": "semantic-segmentation", "ljspeech": "speech-synthesis", "glue-sst2": "text-classification",
    "glue-mnli": "text-classification", "squad": "question-answering", "wikitext-103": "language-modeling",
    "wikitext-2": "language-modeling", "openwebtext": "language-modeling", "alpaca": "language-modeling",
    "wmt14-en-de": "translation", "wmt16-en-de": "translation", "cnn-dailymail": "summarization", "librispeech": "speech-recognition",
    "movielens-1m": "recommendation", "atari-breakout": "reinforcement-learning",
    "mujoco-halfcheetah": "reinforcement-learning", "celeba": "image-generation",
    "modelnet40": "point-cloud-classification", "laion-aesthetics": "image-generation",
    "slimpajama": "language-modeling", "redpajama": "language-modeling", "dolma": "language-modeling",
    "refinedweb": "language-modeling", "sharegpt": "language-modeling", "fineweb-edu": "language-modeling",
    "celeba-hq": "image-generation", "ffhq": "image-generation", "afhq": "image-generation", "kinetics": "video-classification", "kinetics-400": "video-classification",
    "kinetics-600": "video-classification", "kinetics-700": "video-classification", "something-something-v1":
    "video-classification", "something-something": "video-classification", "ucf101": "video-classification",
    "hmdb51": "video-classification", "something-something-v2": "video-classification", "fineweb": "language-modeling", "laion-400m": "image-text-pretraining", "laion-2b": "image-text-pretraining",
    "imagenet-22k": "image-classification", "mnist": "image-classification", "enwik8": "language-modeling",
    "pile": "language-modeling", "c4": "language-modeling", "cc12m": "image-text-pretraining",
    "cc3m": "image-text-pretraining",
    "penn-treebank": "language-modeling", "penn-treebank-char": "language-modeling", "lambada": "language-modeling",
    "text8": "language-modeling", "bookcorpus": "language-modeling", "multi30k": "translation",
    "fashion-mnist": "image-classification", "kmnist": "image-classification", "emnist": "image-classification",
    "tiny-imagenet": "image-classification", "svhn": "image-classification", "places365": "image-classification",
    "food101": "image-classification", "oxford-flowers": "image-classification", "oxford-pets": "image-classification",
    "cub200": "image-classification", "stanford-cars": "image-classification", "inaturalist": "image-classification",
    "caltech101": "image-classification", "caltech256": "image-classification",
    "cora": "node-classification", "citeseer": "node-classification", "pubmed": "node-classification",
    "mjsynth": "text-recognition", "mjsynth-synthtext": "text-recognition",
    **{f"wmt{y}": "translation" for y in range(15, 30)}, "ms-marco": "text-retrieval", "snli": "text-classification",
    "imdb": "text-classification", "ag-news": "text-classification", "common-voice": "speech-recognition",
    "vctk": "speech-synthesis", "esc50": "audio-classification", "audioset": "audio-classification",
    "lvis": "instance-segmentation", "objects365": "object-detection", "kitti": "object-detection",
    "facades": "image-to-image-translation", "horse2zebra": "image-to-image-translation",
    "edges2shoes": "image-to-image-translation",
    "grumpifycat": "image-to-image-translation",
    **{f"glue-{t}": "text-classification" for t in ("mrpc", "cola", "qnli", "rte", "qqp", "stsb", "sts-b")},
}

# code signals of the task: HF auto classes, example script names, mmengine model types
TASK_SIGNALS: tuple[tuple[str, str], ...] = (
    # the objective before the data: a masked-autoencoder or contrastive run on ImageNet is pretraining
    (r"main_pretrain|mask_ratio|audio_pretraining|wav2vec|simclr|(?<![a-z])moco|(?<![a-z])dino(?![a-z])|"
     r"(?<![a-z])byol(?![a-z])|pretrain_mae|mae_vit|masked_autoencoder|dinov2|(?<![a-z])ibot(?![a-z])|simsiam|"
     r"(?<![a-z])swav(?![a-z])|barlow[_ ]?twins|(?<![a-z])[iv]?-?jepa(?![a-z])|simmim|(?<![a-z])msn(?![a-z])|"
     r"(?<![a-z])mocov[23]", "self-supervised-pretraining"),
    # image-text contrastive training (CLIP and its reimplementations)
    (r"open_?clip|clip_train|cliploss|clip_loss", "image-text-pretraining"),
    # a language model fed by a vision tower through a projector (LLaVA-style visual instruction tuning)
    (r"vision_tower|mm_projector", "vision-language-modeling"),
    (r"masked_lm|(?<![a-z])run_mlm|(?<![a-z])mlm_probability|max_predictions_per_seq", "language-modeling"),
    (r"imageclassifier", "image-classification"),
    (r"forcausallm|run_clm|pretrain_gpt|gpt2lmhead|pretrain_bert|pretrain_t5|causal_lm", "language-modeling"),
    (r"forsequenceclassification|run_glue", "text-classification"),
    (r"forquestionanswering|run_qa|run_squad", "question-answering"),
    (r"forseq2seqlm|run_summarization", "summarization"),
    (r"run_translation", "translation"),
    (r"forimageclassification|run_image_classification", "image-classification"),
    (r"forctc|run_speech_recognition", "speech-recognition"),
    (r"unet2dconditionmodel|train_text_to_image", "image-generation"),
    (r"fasterrcnn|maskrcnn|retinanet|detdatasets|cocodataset", "object-detection"),
    (r"segformerhead|ade20kdataset|encoderdecoder", "semantic-segmentation"),
    # denoising diffusion: its options name the noise process
    (r"diffusion_steps|noise_schedule|(?<![a-z])ddpm(?![a-z])|image_train\.py|latent-diffusion|(?<![a-z])diffusion-engine", "image-generation"),
    # an autoencoder trained alone (the first stage of a latent diffusion model)
    (r"(?<![a-z])autoencoder-kl|(?<![a-z])vq-model(?![a-z])", "image-autoencoding"),
    # last: a timm model with nothing more specific around it
    (r"(?<![a-z])timm(?![a-z])", "image-classification"),
)

def norm(name: str) -> str:
    """Lower case, every run of other characters one '-': "ViT-B/16" -> "vit-b-16"."""
    return re.sub(r"[^a-z0-9]+", "-", str(name).lower()).strip("-")


def _strip_org(name: str) -> str:
    """'google/vit-base-patch16-224' -> 'vit-base-patch16-224'; 'ViT-B/16' and paths stay whole."""
    s = str(name).strip()
    if "/" in s and not s.startswith(("/", ".")) and not re.search("stable-diffusion", s, re.I):
        tail = s.split("/")[-1]
        if re.search(r"[a-z]{2}", tail.lower()):
            return tail
    return s


#: model families people train, as torchvision / timm / the Hugging Face hub spell them: a name that
#: starts with one (after an organisation prefix) is a model even when no rule above gives it a finer id
_FAMILIES = re.compile(
    # convolutional families: the depth or variant follows the name (resnet101, densenet121, efficientnet-b3)
    r"^(?:preact-?)?(?:(?:wide-?)?resne(?:x|s)?t|densenet|vgg|inception-?v?|mobilenet-?v?|mnasnet|shufflenet-?v?|"
    r"efficientnet(?:-?v2)?-?[bsml]?|regnet[xy]?-?|darknet|cspdarknet|hrnet-?w?|dla|dpn|repvgg-?[ab]?|yolov?)\d+|"
    # families whose size is a word or a parameter count (vit-small, deit-small-patch16, llama-3-8b, dit-xl)
    r"^(?:meta-)?(?:convnext(?:-?v2)?|swin(?:-?v2)?|deit\d*|vit|beit(?:-?v2)?|cait|eva\d*|levit|xcit|dit|sit|"
    r"clip|siglip|blip\d*|sam\d*|dino(?:v2)?|mae|gpt(?:-?j|-?neo-?x?)?|llama|tinyllama|mistral|mixtral|qwen|gemma|"
    r"phi|falcon|bloom|opt|mpt|olmo|pythia|vicuna|stablelm|t5|flan-t5|bart|bert|roberta|deberta|electra|albert|"
    r"distilbert|xlnet|whisper|wav2vec\d*|hubert|stylegan\d*)[\d.]*(?:-v?\d+)*-"
    r"(?:tiny|small|base|large|huge|giant|xl|xxl|nano|mini|medium|[smblhgt]\d*|\d+(?:-\d+)?[mbk])(?:$|-)")
_FILE_SUFFIX = re.compile(r"-(pt|pth|ckpt|bin|safetensors|ya?ml|json|py|h5)$")


def known_model(name: str | None, strip: bool = True) -> str | None:
    """Canonical id only when the name is a known model (else None): used to rank candidates.
    strip=False matches the whole string ("llama2/7B_full" names a config of LLaMA-2 7B)."""
    if name is None or not str(name).strip():
        return None
    n = norm(_strip_org(name) if strip else name)
    m = re.search(r"(?:^|-)yolov?(5|8)([nsmlx])(?:$|-|6)", n)
    if m:
        return f"yolov{m.group(1)}{m.group(2)}"
    for pat, key in MODEL_RULES:
        m = re.search(pat, n)
        if m:
            if "\\" in key:
                return m.expand(key)
            # a family written with its generation digit (`pointnet2_cls_ssg`): the digit is part of the name
            v = re.match(r"(\d)(?=$|-)", n[m.end():])
            if v and m.group(0) == key and key[-1].isalpha():
                return key + v.group(1)
            return key
    n = _FILE_SUFFIX.sub("", n)
    if _FAMILIES.match(n):
        return re.sub(r"^meta-(?=llama)", "", n)
    return None


def canonical_model(name: str | None) -> str | None:
    """Canonical model id of a written name, or the normalised name when unknown (None for empty)."""
    if name is None or not str(name).strip():
        return None
    known = known_model(name)
    if known:
        return known
    n = norm(_strip_org(name))
    # one spelling of a family's variants written run together (`dabdetr`, `ConditionalDETR` -> `dab-detr`,
    # `conditional-detr`, as FAMILY_TASK and the labels write them); the name stays unknown to known_model
    return _RUN_TOGETHER.sub(r"\1-\2", n) or None


_RUN_TOGETHER = re.compile(r"^(conditional|dab|dn|deformable|anchor|group|lw|rt)(detr)(?=$|-)")


#: model families written with a version suffix (mobilenet-v2, efficientnet-v2, resnet-v1): not gym ids
_VERSIONED_MODELS = re.compile(r"(mobilenet|efficientnet|shufflenet|inception|resnet|resnext|convnext|swin|beit|"
                               r"deit|yolo|squeezenet|mnasnet|regnet|densenet|vgg|xception|nasnet)-v\d+$")


#: dataset families whose variants are different datasets (classes, videos, versions): the family name alone does not
#: say which one a job trains on -> the variant's class count where one tells them apart (resolve.py reads it)
DATASET_FAMILIES: dict[str, dict[int, str]] = {
    "kinetics": {400: "kinetics-400", 600: "kinetics-600", 700: "kinetics-700"},
    "something-something": {},  # (v1 and v2 both have 174 classes)
    "zinc": {},
}


def canonical_dataset(value: str | None) -> str | None:
    """Canonical dataset of a name or a path (searched segment by segment); None when unknown."""
    if value is None:
        return None
    n = norm(value)
    for pat, key in DATASET_RULES:
        m = re.search(pat, n)
        if m:
            if pat == _GYM_ID and (known_model(n) or _VERSIONED_MODELS.match(n)):  # a model, not a gym id
                return None
            return m.expand(key).replace("sts-b", "stsb") if "\\" in key else key
    return None


# the objective as the training code writes it: identifiers of the loss, the sampler, the environment loop.
# Read from the entry and the training-loop modules it imports (comments dropped), so that a diffusion model
# or a self-supervised run on ImageNet is not taken for classification because of the dataset's name.
OBJECTIVE_SIGNALS: dict[str, tuple[str, ...]] = {
    "reinforcement-learning": (r"gym(nasium)?\.make", r"envpool", r"\benvs?\.step\(", r"replay_?buffer", r"vectorenv",
                               r"q_?network", r"advantages?\b", r"td_target", r"episodic_return", r"policy_loss"),
    "image-generation": (r"diffusion", r"noise_schedul", r"\bq_sample", r"\bp_sample", r"\bddpm", r"\bddim",
                         r"denois", r"discriminator", r"\bgenerator\b", r"\bvae\.(encode|decode)", r"\bfid\d*k?\b",
                         r"score_(fn|model)", r"\bsde\b"),
    # (a tokenizer and a vocabulary belong to every text task: only the next-token objective counts)
    "language-modeling": (r"lm_head", r"next_token", r"causal", r"block_size", r"perplexity", r"autoregress",
                          r"forcausallm", r"shift_(logits|labels)", r"\bgpt\w*\(", r"\bllama"),
    # (dataset names such as glue / sst2 are not objectives: a default or a decoy in the code is not the run)
    "text-classification": (r"num_labels", r"sequenceclassification", r"label2id"),
    "self-supervised-pretraining": (r"info_?nce", r"nt_?xent", r"contrastive", r"mask_ratio", r"target_encoder",
                                    r"momentum_encoder", r"sinkhorn", r"prototypes", r"queue_length", r"n_views",
                                    r"projection_head", r"\bpredictor\b", r"jepa", r"masked_autoencoder"),
    "image-classification": (r"num_classes", r"\btop-?1\b", r"\btop-?5\b", r"label_smoothing", r"\bmixup",
                             r"\bcutmix", r"crossentropyloss", r"correct\s*\+=", r"\baccuracy\b"),
    "object-detection": (r"\bbbox", r"box_loss", r"\banchors?\b", r"\bnms\b", r"\broi_", r"giou", r"hungarian|matcher",
                         r"num_queries", r"box_ops|box_cxcywh", r"\bcoco_?eval"),
    # image-text pre-training: contrastive and matching losses over paired image and text features
    "image-text-pretraining": (r"loss_it[ac]\b|\bit[ac]_loss", r"loss_itm\b|\bitm_loss", r"image_feat", r"text_feat",
                               r"text_encoder", r"visual_encoder|vision_encoder"),
}
_COMMENT = re.compile(r"(?m)#.*$")


def task_from_objective(texts: list[str]) -> tuple[str, int] | None:
    """The task whose objective identifiers occur most (distinct patterns; at least 2 and more than any
    other task's), with the count; None when the code does not say clearly."""
    return _objective(tuple(texts))


@lru_cache(maxsize=2048)
def _objective(texts: tuple[str, ...]) -> tuple[str, int] | None:
    """Cached per distinct set of sources: a warm Advisor reads one repository's files many times."""
    text = _COMMENT.sub("", "\n".join(texts)).lower()
    hits = sorted(((sum(1 for p in pats if re.search(p, text)), task) for task, pats in OBJECTIVE_SIGNALS.items()),
                  reverse=True)
    (n1, t1), (n2, _) = hits[0], hits[1]
    return (t1, n1) if n1 >= 2 and n1 > n2 else None


# the entry's own name says the downstream task (train_caption.py, train_vqa.py, train_retrieval.py)
NAME_TASK_SIGNALS: tuple[tuple[str, str], ...] = (
    (r"caption", "image-captioning"),
    (r"(?<![a-z])vqa", "visual-question-answering"),
    (r"retrieval", "image-text-retrieval"),
    (r"(^|/)segment(ation)?/", "segmentation"),  # YOLO-style task folders: segment/train.py
    (r"(^|/)(diffusion|text_?to_?image|t2i)(/|_train|$)", "image-generation"),  # scripts/diffusion/train.py
    (r"(^|/)(vae|autoencoders?)(/|_train|$)", "image-autoencoding"),  # scripts/vae/train.py
    (r"(^|/|_)classifier_train", "image-classification"),  # scripts/classifier_train.py: a classifier is trained
    (r"(^|/|_)(cycle_?gan|pix2pix(hd)?|stargan|munit|discogan|dualgan)(/|\.py|_|$)", "image-to-image-translation"),
)


def task_from_names(text: str) -> str | None:
    t = text.lower()
    return next((task for pat, task in NAME_TASK_SIGNALS if re.search(pat, t)), None)


def task_from_signals(text: str) -> str | None:
    t = text.lower()
    for pat, task in TASK_SIGNALS:
        if re.search(pat, t):
            return task
    return None
