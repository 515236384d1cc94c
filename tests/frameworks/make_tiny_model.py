"""Writes a tiny causal LM the real frameworks can load offline: config.json, model.safetensors
(random weights, seeded), a byte-level BPE tokenizer trained on the chat data (tokenizer.json
for transformers, vocab.json + merges.txt for torchtune's Qwen2 tokenizer) and a ChatML chat
template. Run with the frameworks venv's Python (scripts/venv.sh frameworks).

usage: make_tiny_model.py OUT_DIR DATA.jsonl [--arch llama|qwen2] [--vocab N]
"""
import argparse
import json
import os

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedTokenizerFast

# ChatML, as Qwen2's tokenizer_config.json writes it; torchtune's Qwen2 tokenizer knows these
# special tokens by name (torchtune/models/qwen2/_tokenizer.py).
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def texts(data_path):
    with open(data_path) as f:
        for line in f:
            if line.strip():
                for m in json.loads(line)["messages"]:
                    yield m["content"]


def tokenizer(data_path, vocab):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts(data_path), trainer)
    return tok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("data")
    ap.add_argument("--arch", choices=["llama", "qwen2"], default="llama")
    ap.add_argument("--vocab", type=int, default=512)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)

    tok = tokenizer(a.data, a.vocab)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   bos_token=None, chat_template=CHAT_TEMPLATE)
    fast.save_pretrained(a.out)
    tok.model.save(a.out)   # vocab.json + merges.txt (torchtune's Qwen2 tokenizer reads these)

    config = AutoConfig.for_model(
        a.arch, vocab_size=len(fast), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, rms_norm_eps=1e-6,
        tie_word_embeddings=a.arch == "qwen2", bos_token_id=None, eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id)
    model = AutoModelForCausalLM.from_config(config)
    model.to(torch.float32).save_pretrained(a.out, safe_serialization=True)
    print(json.dumps({"dir": a.out, "arch": a.arch, "vocab": len(fast),
                      "params": sum(p.numel() for p in model.parameters())}))


if __name__ == "__main__":
    main()
