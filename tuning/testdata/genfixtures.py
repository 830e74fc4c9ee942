#!/usr/bin/env python3
"""Writes the fixture hosts (txtar archives) the tuning tests expand into a
temporary directory. Run from tuning/testdata when a fixture needs to change;
the archives, not this script, are what tests read. A name "a -> b" in an
archive is a symlink a pointing at b, as in sysfs."""
import json

def interrupts_header(ncpu):
    return " " * 5 + "".join(f"CPU{i}".rjust(11) for i in range(ncpu)) + "\n"

def irq_line(num, ncpu, chip, hw, name, hot=None):
    counts = "".join(str((1000 * (i + 1) if hot == i else 0)).rjust(11) for i in range(ncpu))
    return f"{num:>4}:{counts}  {chip} {hw} {name}\n"

def arch_lines(ncpu, names):
    return "".join(f"{n:>4}:" + "".join("0".rjust(11) for _ in range(ncpu)) + f"   {d}\n" for n, d in names)

def cpu_files(files, ncpu, core_of, siblings, package_of):
    files["sys/devices/system/cpu/online"] = f"0-{ncpu-1}"
    files["sys/devices/system/cpu/possible"] = f"0-{ncpu-1}"
    for c in range(ncpu):
        d = f"sys/devices/system/cpu/cpu{c}/topology/"
        files[d + "core_id"] = str(core_of(c))
        files[d + "physical_package_id"] = str(package_of(c))
        files[d + "thread_siblings_list"] = siblings(c)
        files[d + "core_cpus_list"] = siblings(c)

def pci_nic(files, ifname, pci, driver, node, irqs):
    dev = f"sys/devices/pci0000:00/{pci}"
    files[f"sys/class/net/{ifname} -> ../../devices/pci0000:00/{pci}/net/{ifname}"] = ""
    files[f"{dev}/net/{ifname}/mtu"] = "9001"
    files[f"{dev}/net/{ifname}/device -> ../../../{pci}"] = ""
    files[f"{dev}/driver -> ../../../bus/pci/drivers/{driver}"] = ""
    if node is not None:
        files[f"{dev}/numa_node"] = str(node)
    for n in irqs:
        files[f"{dev}/msi_irqs/{n}"] = "msix"

def affinity(files, irq, cpus):
    files[f"proc/irq/{irq}/smp_affinity_list"] = cpus

def sysctls(files):
    files["proc/sys/net/core/rmem_max"] = "212992"
    files["proc/sys/net/core/wmem_max"] = "212992"
    files["proc/sys/net/ipv4/tcp_rmem"] = "4096\t131072\t6291456"
    files["proc/sys/net/ipv4/tcp_wmem"] = "4096\t16384\t4194304"

def fixture(files, channels=None, irqbalance=None, addresses=None):
    for ifname, ch in (channels or {}).items():
        full = {k: 0 for k in ["max_rx", "max_tx", "max_other", "max_combined", "rx", "tx", "other", "combined"]}
        full.update(ch)
        files[f"_fixture/ethtool/{ifname}.json"] = json.dumps(full, indent=2)
    if irqbalance is not None:
        files["_fixture/systemd/irqbalance.service.json"] = json.dumps(irqbalance)
    if addresses:
        files["_fixture/addresses"] = "\n".join(addresses)

def write(path, comment, files):
    with open(path, "w") as f:
        f.write(comment.strip() + "\n")
        for name in sorted(files):
            body = files[name]
            if body and not body.endswith("\n"):
                body += "\n"
            f.write(f"-- {name} --\n{body}")

def graviton():
    # c8gn.16xlarge: 64 Graviton4 cores, no SMT, one NUMA node; ENA ens50
    # with 32 combined queues, one IRQ per queue plus a management IRQ.
    ncpu, files = 64, {}
    cpu_files(files, ncpu, lambda c: c, lambda c: str(c), lambda c: 0)
    files["sys/devices/system/node/node0/cpulist"] = "0-63"
    files["sys/devices/system/node/online"] = "0"
    ens50 = list(range(41, 73))
    ens5 = [75, 76]
    pci_nic(files, "ens50", "0000:00:05.0", "ena", 0, [40] + ens50)
    # A second ENI named so that "ens5" must not match "ens50-…" IRQs.
    pci_nic(files, "ens5", "0000:00:06.0", "ena", 0, [74] + ens5)
    files["sys/class/net/lo -> ../../devices/virtual/net/lo"] = ""
    files["sys/devices/virtual/net/lo/mtu"] = "65536"
    text = interrupts_header(ncpu)
    text += irq_line(11, ncpu, "GICv3", "27 Level", "arch_timer", hot=0)
    text += irq_line(14, ncpu, "GICv3", "36 Level", "uart-pl011")
    text += irq_line(40, ncpu, "ITS-MSI", "81920 Edge", "ena-mgmnt@pci:0000:00:05.0", hot=5)
    for i, n in enumerate(ens50):
        # irqbalance spread them; queue 7's IRQ sits on CPU 0 after a reset.
        text += irq_line(n, ncpu, "ITS-MSI", f"{81921+i} Edge", f"ens50-Tx-Rx-{i}", hot=(i * 2) % ncpu)
    text += irq_line(74, ncpu, "ITS-MSI", "98304 Edge", "ena-mgmnt@pci:0000:00:06.0")
    for i, n in enumerate(ens5):
        text += irq_line(n, ncpu, "ITS-MSI", f"{98305+i} Edge", f"ens5-Tx-Rx-{i}", hot=9)
    for n in range(80, 84):
        text += irq_line(n, ncpu, "ITS-MSI", f"{16384+n} Edge", f"nvme0q{n-80}", hot=n - 80)
    text += arch_lines(ncpu, [("IPI0", "Rescheduling interrupts"), ("IPI1", "Function call interrupts")])
    files["proc/interrupts"] = text
    for n in [11, 14, 40, 74] + ens5 + list(range(80, 84)):
        affinity(files, n, "0-63")
    for i, n in enumerate(ens50):
        affinity(files, n, "0" if i == 7 else str((i * 2) % ncpu))
    sysctls(files)
    files["etc/sysconfig/irqbalance"] = (
        "# irqbalance is a daemon process that distributes interrupts across\n"
        "# CPUS on SMP systems.\n"
        "#IRQBALANCE_ONESHOT=\n"
        "#IRQBALANCE_BANNED_CPULIST=\n"
        "IRQBALANCE_ARGS=\"\"")
    fixture(files,
            channels={"ens50": {"max_combined": 32, "combined": 32}, "ens5": {"max_combined": 8, "combined": 2}},
            irqbalance={"present": True, "active": True},
            addresses=["ens50 10.0.1.15/24", "ens5 10.0.9.15/24"])
    write("graviton-c8gn16xl.txtar", """
A c8gn.16xlarge-like Graviton4 host: 64 CPUs, no SMT, one NUMA node, ENA ens50
with 32 combined queues (IRQs 41-72 named ens50-Tx-Rx-N, management IRQ 40),
a second ENI ens5, irqbalance running (Amazon Linux: /etc/sysconfig).
Generated by genfixtures.py.
""", files)

def x86():
    # Two sockets, 16 cores each, two threads per core (64 CPUs), Intel-style
    # numbering: CPU c and c+32 are siblings. mlx5 NIC on node 1.
    ncpu, files = 64, {}
    sib = lambda c: f"{c % 32},{c % 32 + 32}"
    cpu_files(files, ncpu, lambda c: c % 16, sib, lambda c: (c % 32) // 16)
    files["sys/devices/system/node/node0/cpulist"] = "0-15,32-47"
    files["sys/devices/system/node/node1/cpulist"] = "16-31,48-63"
    files["sys/devices/system/node/online"] = "0-1"
    comp = list(range(120, 136))
    pci_nic(files, "enp175s0f0", "0000:af:00.0", "mlx5_core", 1, [119] + comp)
    files["sys/class/net/lo -> ../../devices/virtual/net/lo"] = ""
    files["sys/devices/virtual/net/lo/mtu"] = "65536"
    text = interrupts_header(ncpu)
    text += irq_line(0, ncpu, "IO-APIC", "2-edge", "timer", hot=0)
    text += irq_line(8, ncpu, "IO-APIC", "8-edge", "rtc0")
    text += irq_line(119, ncpu, "IR-PCI-MSIX-0000:af:00.0", "0-edge", "mlx5_async0@pci:0000:af:00.0", hot=16)
    for i, n in enumerate(comp):
        text += irq_line(n, ncpu, "IR-PCI-MSIX-0000:af:00.0", f"{i+1}-edge", f"mlx5_comp{i}@pci:0000:af:00.0", hot=i * 2)
    text += arch_lines(ncpu, [("NMI", "Non-maskable interrupts"), ("LOC", "Local timer interrupts")])
    files["proc/interrupts"] = text
    for n in [0, 8, 119]:
        affinity(files, n, "0-63")
    for i, n in enumerate(comp):
        # Spread over node 0 by an irqbalance that ignores the NIC's node.
        affinity(files, n, str(i * 2))
    sysctls(files)
    files["etc/default/irqbalance"] = (
        "# irqbalance is a daemon process that distributes interrupts across\n"
        "#IRQBALANCE_BANNED_CPULIST=\n"
        "IRQBALANCE_ARGS=\"--policyscript=/etc/irqbalance.d/policy\"")
    fixture(files,
            channels={"enp175s0f0": {"max_combined": 16, "combined": 16}},
            irqbalance={"present": True, "active": True},
            addresses=["enp175s0f0 198.18.5.2/24"])
    write("x86-smt-2numa.txtar", """
An x86 host with two sockets of 16 cores, two threads per core (64 CPUs;
CPU c and c+32 are siblings), NUMA node 0 = 0-15,32-47, node 1 = 16-31,48-63,
and an mlx5 NIC enp175s0f0 on node 1 with 16 combined queues (mlx5_compN IRQs
120-135, async IRQ 119). irqbalance running (Debian: /etc/default).
Generated by genfixtures.py.
""", files)

def vm():
    # The CI machine's shape: 2 vCPUs, no NUMA directory, virtio-net eth0
    # whose vectors belong to the PCI parent of virtio2, no systemd.
    ncpu, files = 2, {}
    cpu_files(files, ncpu, lambda c: c, lambda c: str(c), lambda c: 0)
    files["sys/class/net/eth0 -> ../../devices/pci0000:00/0000:00:03.0/virtio2/net/eth0"] = ""
    files["sys/devices/pci0000:00/0000:00:03.0/virtio2/net/eth0/mtu"] = "1500"
    files["sys/devices/pci0000:00/0000:00:03.0/virtio2/net/eth0/device -> ../../../virtio2"] = ""
    files["sys/devices/pci0000:00/0000:00:03.0/virtio2/driver -> ../../../../bus/virtio/drivers/virtio_net"] = ""
    for n in (37, 38, 39):
        files[f"sys/devices/pci0000:00/0000:00:03.0/msi_irqs/{n}"] = "msix"
    files["sys/class/net/lo -> ../../devices/virtual/net/lo"] = ""
    files["sys/devices/virtual/net/lo/mtu"] = "65536"
    text = interrupts_header(ncpu)
    text += irq_line(24, ncpu, "IO-APIC", "5-edge", "ACPI:Ged", hot=0)
    text += irq_line(36, ncpu, "PCI-MSIX-0000:00:02.0", "1-edge", "virtio1-req.0", hot=1)
    text += irq_line(37, ncpu, "PCI-MSIX-0000:00:03.0", "0-edge", "virtio2-config")
    text += irq_line(38, ncpu, "PCI-MSIX-0000:00:03.0", "1-edge", "virtio2-input.0", hot=1)
    text += irq_line(39, ncpu, "PCI-MSIX-0000:00:03.0", "2-edge", "virtio2-output.0", hot=0)
    text += irq_line(41, ncpu, "PCI-MSIX-0000:00:04.0", "1-edge", "virtio3-rx", hot=0)
    text += arch_lines(ncpu, [("NMI", "Non-maskable interrupts"), ("LOC", "Local timer interrupts")])
    files["proc/interrupts"] = text
    for n, a in [(24, "0-1"), (36, "1"), (37, "0-1"), (38, "1"), (39, "0"), (41, "0")]:
        affinity(files, n, a)
    sysctls(files)
    fixture(files, channels={"eth0": {"max_combined": 1, "combined": 1}}, addresses=["eth0 10.0.2.15/24"])
    write("vm-2cpu.txtar", """
A small VM like the CI machine: 2 vCPUs, no NUMA directory in sysfs,
virtio-net eth0 (virtio2 under PCI 0000:00:03.0, which owns the MSI vectors:
37 config, 38 input.0, 39 output.0), one combined queue, loopback, and no
systemd (irqbalance absent). Generated by genfixtures.py.
""", files)

graviton()
x86()
vm()
