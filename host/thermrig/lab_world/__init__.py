"""A simulated lab on one machine (`thermrig lab demo`; the lab tests): a labgrid coordinator, simulated
rigs as places exported through ser2net, each place's test PC a fio server and an sshd on loopback."""
