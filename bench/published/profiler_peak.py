"""The peak of CPU tensor bytes in a torch.profiler run (profile_memory=True): its [memory] events in
time order, each a signed allocation or free, summed (torch has no allocator statistics on a CPU).
Relative to what was alive when profiling began; blocks allocated before it and freed inside are not
seen as freed (torch warns of them)."""


def allocation_peak(prof):
    events = sorted((e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"),
                    key=lambda e: e.start_ns())
    alive = peak = 0
    for e in events:
        alive += e.nbytes()
        peak = max(peak, alive)
    return peak
