"""Go duration strings both ways."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError
from ansible_collections.nodeguard.failover.plugins.module_utils.model.durations import format_duration, parse_duration


@pytest.mark.parametrize("seconds, text", [
    (4, "4s"), (60, "1m0s"), (300, "5m0s"), (0.75, "750ms"), (0.5, "500ms"), (10.5, "10.5s"),
    (3600, "1h0m0s"), (3725, "1h2m5s"), (0, "0s"), (90.25, "1m30.25s"),
])
def test_format_matches_go(seconds, text):
    assert format_duration(seconds) == text


@pytest.mark.parametrize("text, seconds", [
    ("4s", 4), ("1m0s", 60), ("1m30s", 90), ("750ms", 0.75), ("1.5s", 1.5), ("2h", 7200),
    ("1h2m5s", 3725), ("40", 40), (12, 12), (2.5, 2.5), ("0", 0),
])
def test_parse(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["4 s", "s", "4x", "1m-3s", "", True, None, [4]])
def test_parse_refuses(text):
    with pytest.raises(ProfileError) as error:
        parse_duration(text)
    assert error.value.rule == "wrong-type"


@pytest.mark.parametrize("seconds", [0.5, 0.75, 1, 4, 10.5, 59, 60, 61.5, 300, 3600, 7875])
def test_round_trip(seconds):
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds)
