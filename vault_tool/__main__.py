import sys

if sys.argv[1:2] == ["textconv"]:
    # git's diff driver, started for each side of each file a diff shows: it skips the
    # command group's imports (cli/textconv.py).
    from vault_tool.cli.textconv import run

    raise SystemExit(run(sys.argv[2:]))

from vault_tool.cli.app import main

main()
