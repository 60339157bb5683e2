"""``python -m indexfoundry``: the same CLI as the ``indexfoundry`` command."""

from indexfoundry.surfaces.cli import main

if __name__ == "__main__":
    main()
