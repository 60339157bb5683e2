"""The driver of the Ray tests, run inside the cluster's network namespace by the test.

``python -m tests.integration.ray_driver CONFIG RUNS ADDRESS [--base ID] [--record FILE]
[--stall-marker FILE]`` runs the pipeline on the Ray executor and prints its output as JSON.
"""

from __future__ import annotations

import argparse

from indexfoundry import api
from tests.fakes import FileRecordingEmbedder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("config")
    parser.add_argument("runs_dir")
    parser.add_argument("address")
    parser.add_argument("--base")
    parser.add_argument("--record")
    parser.add_argument("--stall-marker")
    args = parser.parse_args()
    embedder = FileRecordingEmbedder(args.record, args.stall_marker) if args.record else None
    output = api.pipeline_run(
        args.config,
        runs_dir=args.runs_dir,
        base=args.base,
        embedder=embedder,
        executor="ray",
        ray_address=args.address,
    )
    print(output.model_dump_json())


if __name__ == "__main__":
    main()
