"""Fill the ${cp_ip} and ${node} placeholders of the kubeadm-style templates.

usage: render.py --ip 10.89.77.10 --node ng-cp1 --out DIR TEMPLATE...
Each template is written to DIR under its own file name.
"""

from __future__ import annotations

import argparse
import string
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ip", required=True)
    parser.add_argument("--node", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("templates", type=Path, nargs="+")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for template in args.templates:
        text = string.Template(template.read_text()).substitute(cp_ip=args.ip, node=args.node)
        (args.out / template.name).write_text(text)


if __name__ == "__main__":
    main()
