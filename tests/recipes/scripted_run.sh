#!/bin/sh
# A scripted run: protocol lines on stdout as a framework's reporter prints them, mixed with
# the framework's own output on stdout and stderr. `wingspan watch` must record exactly this.
echo 'loading model (framework output, not protocol)'
echo '{"v":1,"event":"hello","t":0.01,"trainer":"scripted","framework":"scripted","external":true}'
echo '{"v":1,"event":"predicted","t":0.02,"components":{"frozen_weights":1000000,"activations":500000},"peak_bytes":1500000,"total_bytes":2000000}'
echo 'warming up' >&2
echo '{"v":1,"event":"memory","t":0.10,"step":0,"phase":"forward","components":{},"allocated_bytes":1200000,"peak_bytes":1400000,"rss_bytes":1900000,"rss_peak_bytes":1900000}'
echo '{"v":1,"event":"step","t":0.20,"step":1,"total_steps":2,"loss":2.5,"lr":0.0002,"tokens_per_s":1000,"tokens":100}'
echo '{"v":1,"event":"memory","t":0.30,"step":1,"phase":"backward","components":{},"allocated_bytes":1300000,"peak_bytes":1600000,"rss_bytes":2100000,"rss_peak_bytes":2100000}'
echo '{"v":1,"event":"step","t":0.40,"step":2,"total_steps":2,"loss":2.0,"lr":0.0001,"tokens_per_s":1100,"tokens":100}'
echo 'saving adapters'
echo '{"v":1,"event":"done","t":0.50,"reason":"completed","steps":2,"peak_bytes":1600000,"rss_peak_bytes":2100000}'
