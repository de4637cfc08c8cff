from charter.compiler.cli import entry

entry()
