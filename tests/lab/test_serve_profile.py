"""lab/serve_profile.py's reading of py-spy's collapsed stacks: a frame's inclusive share counts each
sample once however often the frame recurs in its stack, the self share goes to the leaf, and the
process name (every stack's root) is no frame."""

from __future__ import annotations


def test_inclusive_and_self_shares_of_collapsed_stacks(lab_script, tmp_path):
    profile = lab_script("serve_profile")
    raw = tmp_path / "stacks.txt"
    raw.write_text(
        'process 1:"uniret serve";loop;search;top_k 6\n'
        'process 1:"uniret serve";loop;search;search;scan 2\n'  # recursion: search counted once
        'process 1:"uniret serve";loop;parse 2\n'
        "\n"
    )
    result = profile.summarize(raw, top=10)
    inclusive = {row["frame"]: row["share"] for row in result["inclusive"]}
    own = {row["frame"]: row["share"] for row in result["self"]}
    assert result["samples"] == 10
    assert inclusive == {"loop": 1.0, "search": 0.8, "top_k": 0.6, "scan": 0.2, "parse": 0.2}
    assert own == {"top_k": 0.6, "scan": 0.2, "parse": 0.2}
    assert profile.summarize(raw, top=1)["inclusive"] == [{"frame": "loop", "share": 1.0}]


def test_no_samples_gives_empty_tables(lab_script, tmp_path):
    profile = lab_script("serve_profile")
    raw = tmp_path / "empty.txt"
    raw.write_text("")
    assert profile.summarize(raw, top=5) == {"samples": 0, "inclusive": [], "self": []}
