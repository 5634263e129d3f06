"""Make the tiny local models the recorder serves: a BPE tokenizer, a random GPT-2 and a random Llama.

Runs with the SGLang venv's Python (it needs torch, transformers, tokenizers, safetensors).
Nothing is downloaded; the weights are seeded, so the same versions give the same files.

    python make_tiny_models.py OUT_DIR     # writes OUT_DIR/gpt2 and OUT_DIR/llama
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

SEED = 0
VOCAB_SIZE = 1024
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def training_text() -> list[str]:
    """Local text to learn merges from: the docstrings of the standard library (same on any host)."""
    import pydoc
    import string

    lines: list[str] = []
    for name in ("os", "json", "string", "collections", "functools", "itertools", "pathlib"):
        module = __import__(name)
        lines.extend(pydoc.render_doc(module, renderer=pydoc.plaintext).splitlines())
    lines.append(string.printable)
    return lines


def make_tokenizer(out: Path) -> None:
    """Train a byte-level BPE tokenizer and save it as a transformers fast tokenizer with a chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(training_text(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<|endoftext|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token="<|endoftext|>",
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)


def make_gpt2(out: Path) -> None:
    """A 2-layer GPT-2 with learned positions (no rotary kernel needed on CPU)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(SEED)
    config = GPT2Config(
        vocab_size=VOCAB_SIZE, n_positions=512, n_embd=64, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=2
    )
    GPT2LMHeadModel(config).save_pretrained(out, safe_serialization=True)
    make_tokenizer(out)


def make_llama(out: Path) -> None:
    """A 2-layer Llama; SGLang serves it on CPU with --model-impl transformers."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    config = LlamaConfig(
        vocab_size=VOCAB_SIZE,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        bos_token_id=0,
        eos_token_id=2,
    )
    LlamaForCausalLM(config).save_pretrained(out, safe_serialization=True)
    make_tokenizer(out)


def main(argv: list[str]) -> int:
    """Write the models under the directory given as the only argument."""
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(argv[0])
    for name, make in (("gpt2", make_gpt2), ("llama", make_llama)):
        target = root / name
        if target.is_dir():
            continue
        partial = root / f".{name}.partial"  # renamed only when complete, so a crash never leaves half a model
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        make(partial)
        partial.rename(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
