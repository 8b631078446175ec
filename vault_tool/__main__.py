from vault_tool.cli.app import main

main()
