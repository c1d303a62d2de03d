# The simulated boards' command lines (sim_main.py on the unix port, sim_machine/pico_sim.py for the
# simulated Pico): "--name VALUE" pairs, each converted by its type, --plant required. Simulation only:
# nothing of it goes onto a board.


def parse_options(argv, program, usage, defaults, convert):
    """argv's "--name VALUE" pairs over `defaults` (keys with "_" for "-"), each VALUE converted by
    convert["--name"]; SystemExit with `usage` on anything else, or without --plant."""
    opts = dict(defaults)
    i = 1
    while i < len(argv):
        a = argv[i]
        if a not in convert or i + 1 >= len(argv):
            raise SystemExit("usage: micropython %s %s" % (program, usage))
        opts[a[2:].replace("-", "_")] = convert[a](argv[i + 1])
        i += 2
    if opts.get("plant") is None:
        raise SystemExit("%s: --plant SOCKET is required" % program)
    return opts
