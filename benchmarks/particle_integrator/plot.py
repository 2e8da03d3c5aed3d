#!/usr/bin/env python3
"""Bar chart of particle_integrator's JSON: each kernel version as a fraction of the ceiling."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src, dst):
    data = json.load(open(src))
    rows = [r for r in data["rows"] if r["group"] != "ceiling"]
    groups = []
    for r in rows:
        if r["group"] not in groups:
            groups.append(r["group"])
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 4.5), sharey=True)
    for ax, group in zip(axes, groups):
        mine = [r for r in rows if r["group"] == group]
        names = [r["name"].replace("coalesce ", "") for r in mine]
        ratios = [r["ratio_to_ceiling"] for r in mine]
        colours = ["#888888" if r["name"].startswith("hand-written") else "#1f77b4" for r in mine]
        ax.barh(names, ratios, color=colours)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_title(group)
        ax.set_xlabel("fraction of the copy ceiling (same run)")
        ax.invert_yaxis()
    fig.suptitle(f"coalesce particle_integrator on {data['device']}, {data['particles']} particles "
                 "(grey: hand-written)")
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print(f"wrote {dst}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot.py integrator.json integrator.png")
    main(sys.argv[1], sys.argv[2])
