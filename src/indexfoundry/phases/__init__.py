"""The five phases: connect, extract, normalize, index, serve — one package each."""
