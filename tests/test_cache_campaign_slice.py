"""A slice of the cache-directory campaign (``make fuzz`` runs a long one:
``python -m tests.fuzz.cache_campaign``): every attack once, each round a
damaged copy of a real cache and a victim process that must finish, not
crash, and compute NumPy's results (then a clean process on the same
directory must too)."""

from fuzz import cache_campaign


def test_every_attack_once():
    s = cache_campaign.run_campaign(len(cache_campaign.ATTACKS), seed=0, workers=2, timeout=120, progress=False)
    lines = [f"seed {f['seed']} {f['attack']} ({f.get('note', '')}): {f['status']}: {f['detail'][:1500]}"
             for f in s["failures"]]
    assert not lines, "\n".join(lines)
    expected = {k for k in cache_campaign.ATTACKS if cache_campaign.ROOT or not k.startswith("foreign")}
    assert set(s["per_attack"]) == expected
