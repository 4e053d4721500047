"""docs/settings.md's generated tables match the model (regenerate with docs/tools/render_settings_tables.py)."""

import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCRIPT = os.path.join(REPO, "docs", "tools", "render_settings_tables.py")


def test_settings_doc_is_up_to_date():
    result = subprocess.run([sys.executable, SCRIPT, "--check"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_rule_is_documented():
    with open(os.path.join(REPO, "docs", "settings.md"), encoding="utf-8") as handle:
        doc = handle.read()
    rules_dir = os.path.join(REPO, "plugins", "module_utils", "model")
    source = ""
    for name in sorted(os.listdir(rules_dir)):
        if name.endswith(".py"):
            with open(os.path.join(rules_dir, name), encoding="utf-8") as handle:
                source += handle.read()
    rule_ids = set(re.findall(r'(?:ProfileError\(|broken\.append\(\(|found\.append\(\()\s*"([a-z0-9-]+)"', source))
    rule_ids |= set(re.findall(r'ProfileError\(\s*"([a-z0-9-]+)"', source))
    assert len(rule_ids) >= 18
    missing = sorted(rule for rule in rule_ids if f"`{rule}`" not in doc)
    assert missing == []
