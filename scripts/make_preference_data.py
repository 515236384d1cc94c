#!/usr/bin/env python3
"""Generates Wingspan's bundled preference data (DPO/ORPO, issue 31): prompts with a correct,
concise answer (chosen) and a wrong or unhelpful one (rejected), in TRL's conversational
preference format ({"prompt": [messages], "chosen": [messages], "rejected": [messages]}).

Everything here is generated from templates in this file: no outside text, released with
Wingspan under CC0. Deterministic: the same script always writes the same bytes.

    python3 scripts/make_preference_data.py   # writes resources/sample-data/preferences.jsonl
"""
import json
import os
import random

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "resources", "sample-data", "preferences.jsonl")
OPPOSITES = [("hot", "cold"), ("big", "small"), ("fast", "slow"), ("early", "late"), ("light", "dark"),
             ("open", "closed"), ("full", "empty"), ("high", "low"), ("wet", "dry"), ("loud", "quiet")]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
UNHELPFUL = ["I would rather not say.", "Look it up yourself.", "That is not an interesting question.",
             "Who knows?"]


def arithmetic(r):
    a, b = r.randint(2, 49), r.randint(2, 49)
    right = a + b
    wrong = right + r.choice([-3, -2, -1, 1, 2, 3])
    return f"What is {a} plus {b}?", f"{a} plus {b} is {right}.", f"{a} plus {b} is {wrong}."


def opposite(r):
    w, o = r.choice(OPPOSITES)
    other = r.choice([x for x, _ in OPPOSITES if x != w])
    return f"What is the opposite of \"{w}\"?", f"The opposite of \"{w}\" is \"{o}\".", f"The opposite of \"{w}\" is \"{other}\"."


def weekday(r):
    i, k = r.randrange(7), r.randint(1, 6)
    right, wrong = DAYS[(i + k) % 7], DAYS[(i + k + r.randint(1, 6)) % 7]
    return (f"Which day comes {k} days after {DAYS[i]}?", f"{k} days after {DAYS[i]} comes {right}.",
            f"{k} days after {DAYS[i]} comes {wrong}.")


def main():
    r = random.Random(31)
    with open(OUT, "w", encoding="utf-8", newline="\n") as f:
        for i in range(160):
            question, good, bad = r.choice([arithmetic, opposite, weekday])(r)
            if i % 4 == 3:
                bad = r.choice(UNHELPFUL)
            # No system prompt: with the built-in byte-level model every byte is a token, and a
            # pair must fit short --seq values with its answers.
            row = {"prompt": [{"role": "user", "content": question}],
                   "chosen": [{"role": "assistant", "content": good}],
                   "rejected": [{"role": "assistant", "content": bad}]}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
