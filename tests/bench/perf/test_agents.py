"""`make bench`, agent trials (bench/perf/agents.py): the proxy's overhead is measured on bodies
of the agents' own shapes, each proxied request beside the provider call it made, and every
request went through the proxy onto the record; the table says what was measured. No speed is
asserted here: the figures belong to `make bench`."""

from __future__ import annotations

import json

from bench.perf import agents


def test_the_proxy_overhead_pairs_each_request_with_its_provider_call(tmp_path):
    out = agents.proxy_overhead(6, tmp_path)
    cases = {k: v for k, v in out.items() if isinstance(v, dict)}
    assert out["n"] == 6 and len(cases) == 3
    for v in cases.values():
        assert 0 < v["direct_ms_p50"] and v["overhead_ms_p50"] <= v["overhead_ms_p99"]
        # the wall holds the provider's call and the proxy's work
        assert v["proxied_ms_p50"] > v["overhead_ms_p50"]
    assert cases["anthropic Claude Code first request, SSE"]["body_chars"] > 70_000  # Claude Code's 24 tools
    logs = sorted(tmp_path.glob("*.jsonl"))
    assert len(logs) == 3
    for log in logs:  # 5 warm-up requests and 6 measured, each on the record with its reply
        kinds = [json.loads(line)["kind"] for line in log.read_text().splitlines()]
        assert kinds.count("agent_request") == kinds.count("agent_reply") == 11


def test_the_table_names_each_figure():
    report = {
        "proxy": {
            "n": 3,
            "openai_chat mini first request": {
                "body_chars": 3407,
                "direct_ms_p50": 8.3,
                "proxied_ms_p50": 9.4,
                "overhead_ms_p50": 1.1,
                "overhead_ms_p99": 2.0,
            },
        },
        "memory": {
            "agent": "mini_swe_agent",
            "trials": 4,
            "wall_s": 100.0,
            "trials_in_flight_peak": 4,
            "harness_rss_peak_mb": 300.0,
            "children_rss_peak_mb": 500.0,
            "mb_per_trial_in_flight": 200.0,
            "outcomes": {"success": 4},
        },
    }
    text = agents.text(report)
    assert "p50    1.10 ms  p99    2.00 ms" in text and "direct provider call 8.3 ms" in text
    assert "memory per mini_swe_agent trial in flight        200.0 MB" in text
    skipped = agents.text(
        {"proxy": {"n": 1}, "memory_skipped": "agent mini_swe_agent 2.4.6 is not installed"}
    )
    assert "not measured (agent mini_swe_agent 2.4.6 is not installed)" in skipped
