#!/usr/bin/env python3
"""Writes the bundled sample data of the non-SFT objectives (resources/sample-data/) from chat.jsonl.

Deterministic, so the files can be checked against this script:
  preference.jsonl       {"prompt", "chosen", "rejected"} text (TRL's standard preference layout,
                         LLaMA-Factory's alpaca ranking columns): chosen is the chat sample's own
                         answer, rejected another question's answer (plainly wrong for this one).
  preference-chat.jsonl  {"chosen": [user, assistant], "rejected": [user, assistant]} (chat-format
                         pairs: TRL's conversational implicit-prompt layout, torchtune's
                         preference_dataset with ChosenRejectedToMessages).
  kto.jsonl              {"prompt", "completion", "label"} (TRL KTO's unpaired layout; LLaMA-Factory's
                         kto_tag): each question once with its own answer (true), once with another's (false).
  prompts.jsonl          {"prompt", "answer"}: sums for GRPO, rewarded when the completion says the answer.
"""
import json
import pathlib
import sys


def main(out: pathlib.Path) -> None:
    rows = [json.loads(line) for line in (out / "chat.jsonl").read_text().splitlines() if line.strip()]
    pairs = []
    for r in rows:
        msgs = r["messages"]
        user = [m["content"] for m in msgs if m["role"] == "user"][-1]
        answer = msgs[-1]["content"] if msgs[-1]["role"] == "assistant" else None
        if answer:
            pairs.append((user, answer))
    n = len(pairs)
    def other(i):
        """Another question's answer (the first one 7 or more rows on that differs): wrong for this one."""
        j = (i + 7) % n
        while pairs[j][1] == pairs[i][1]:
            j = (j + 1) % n
        return pairs[j][1]

    dump = lambda items: "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in items)
    (out / "preference.jsonl").write_text(dump(
        {"prompt": q, "chosen": a, "rejected": other(i)} for i, (q, a) in enumerate(pairs)))
    (out / "preference-chat.jsonl").write_text(dump(
        {"chosen": [{"role": "user", "content": q}, {"role": "assistant", "content": a}],
         "rejected": [{"role": "user", "content": q}, {"role": "assistant", "content": other(i)}]}
        for i, (q, a) in enumerate(pairs)))
    kto = []
    for i, (q, a) in enumerate(pairs[: n // 2]):
        kto.append({"prompt": q, "completion": a, "label": True})
        kto.append({"prompt": q, "completion": other(i), "label": False})
    (out / "kto.jsonl").write_text(dump(kto))
    sums = [(3 + 7 * i % 41, 5 + 11 * i % 53) for i in range(200)]
    (out / "prompts.jsonl").write_text(dump(
        {"prompt": f"What is {a} + {b}? Answer with the number only.", "answer": str(a + b)} for a, b in sums))


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "resources/sample-data"))
