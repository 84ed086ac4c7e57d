"""One real GRPOTrainer step (TRL) whose reward functions are Gradebox's blocking and async
adapters, against the server GRADEBOX_URL names (test/support/trainers.sh starts one): a tiny
randomly initialised Llama built from a config and a character-level tokenizer built here, so
nothing is downloaded. Exits non-zero unless both rewards reached the trainer's logs."""

from __future__ import annotations

import math
import sys
import tempfile
import uuid

import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from trl import GRPOConfig, GRPOTrainer

import gradebox

# the fraction of the completion's characters that are vowels: a reward that varies between samples
VOWELS = """export async function grade(thread) {
  const text = thread.completion() ?? "";
  if (text.length === 0) return null;
  const vowels = [...text].filter((c) => "aeiou".includes(c)).length;
  return { score: vowels / text.length, reason: vowels + " vowels", subscores: [{ name: "length", score: text.length }] };
}"""
# 1 when the completion holds the row's letter, else 0
HAS_LETTER = """export async function grade(thread) {
  return (thread.completion() ?? "").includes(String(thread.metadata.letter)) ? 1 : 0;
}"""


def tokenizer() -> PreTrainedTokenizerFast:
    chars = list("abcdefghijklmnopqrstuvwxyz ?.")
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, **{c: i + 4 for i, c in enumerate(chars)}}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")  # one token per character
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>")


def main() -> int:
    torch.manual_seed(0)
    tok = tokenizer()
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    model = LlamaForCausalLM(config)

    client = gradebox.Gradebox()
    vowels_key, letter_key = f"vowels-{uuid.uuid4().hex[:6]}", f"letter-{uuid.uuid4().hex[:6]}"
    client.graders.create_function(vowels_key, source=VOWELS)
    client.graders.create_function(letter_key, source=HAS_LETTER)
    # TRL runs the blocking one on the training thread and gathers the async one on its event loop
    sync_reward = gradebox.reward_function(vowels_key, client, name="vowels", on_error=None)
    async_reward = gradebox.async_reward_function(letter_key, name="letter")

    data = Dataset.from_dict({"prompt": ["say a word.", "a b c?", "hello?", "why?"], "letter": ["a", "e", "o", "y"]})
    with tempfile.TemporaryDirectory() as out:
        args = GRPOConfig(
            output_dir=out,
            per_device_train_batch_size=4,
            num_generations=4,
            max_completion_length=8,
            max_steps=1,
            logging_steps=1,
            learning_rate=1e-3,
            report_to="none",
            save_strategy="no",
            use_cpu=True,
            bf16=False,
            seed=0,
        )
        trainer = GRPOTrainer(model=model, reward_funcs=[sync_reward, async_reward], args=args, train_dataset=data, processing_class=tok)
        trainer.train()
    logged: dict[str, float] = {}
    for entry in trainer.state.log_history:
        logged.update({k: v for k, v in entry.items() if isinstance(v, (int, float))})
    print("the trainer logged:", {k: v for k, v in logged.items() if k.startswith(("rewards/", "vowels/", "letter/", "reward"))})
    wanted = ["rewards/vowels/mean", "rewards/letter/mean", "vowels/version", "letter/version", "vowels/errors", "letter/errors"]
    missing = [k for k in wanted if k not in logged]
    if missing:
        print(f"FAIL: not in the trainer's logs: {', '.join(missing)}", file=sys.stderr)
        return 1
    if not all(math.isfinite(logged[k]) for k in ("rewards/letter/mean", "vowels/version", "letter/version")):
        print("FAIL: a reward or a version logged is not a number", file=sys.stderr)
        return 1
    print(f"ok: a GRPOTrainer step (TRL) took its rewards from Gradebox: graders {vowels_key} (blocking) and {letter_key} (async)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
