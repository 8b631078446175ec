from vault_tool.cli.main import main

main()
