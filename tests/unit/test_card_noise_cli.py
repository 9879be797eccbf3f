"""bench/card_noise's bad input: one line naming the problem and the fix, a non-zero exit, before any card is taken."""
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_card_noise_asks_two_cards_or_more_in_one_line():
    p = subprocess.run([str(ROOT / "bench" / "card_noise"), "-n", "1"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == ["bench/card_noise: -n 1: give 2 or more (a spread between cards needs two)"]
