"""End-to-end tests: whole runs across processes and files (the CLI in a child process, worker processes,
DDP, the shipped checkpoints measured again, the README's examples), tens of seconds of CPU each at most."""
