"""A plain PyTorch training loop on the CPU reporting through a recipe's wingspan_reporter.py,
as the recipes' framework hooks do. Usage: cpu_loop.py RECIPE_DIR STEPS [--forever]
(--forever: loop until stopped, to test Ctrl-C)."""
import os
import sys

recipe, steps = sys.argv[1], int(sys.argv[2])
forever = "--forever" in sys.argv
sys.path.insert(0, recipe)
from wingspan_reporter import Reporter  # noqa: E402

import torch  # noqa: E402

reporter = Reporter(os.path.join(recipe, "predicted.json"), framework="cpu-loop")


def train():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(256, 64), torch.nn.Linear(64, 256))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.randint(0, 256, (8, 33))
    step = 0
    while forever or step < steps:
        reporter.set_phase("forward")
        logits = model(data[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 256), data[:, 1:].reshape(-1))
        reporter.set_phase("backward")
        loss.backward()
        reporter.set_phase("optimizer")
        opt.step()
        opt.zero_grad()
        step += 1
        reporter.step(step, loss.item(), lr=1e-2, tokens=data[:, 1:].numel(), total_steps=steps)
        if forever:
            import time
            time.sleep(0.05)
    return step


reporter.run(train)
