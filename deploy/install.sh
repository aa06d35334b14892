#!/usr/bin/env bash
# deploy/install.sh agent|controller [--binary PATH] [--dry-run] [--prefix DIR] [--power-switch] [--join [-]]
#
# Installs the vlmfleet agent or controller as a systemd service: the system
# user vlmfleet, its directories, the binary, a configuration skeleton (an
# existing configuration is never replaced) and the hardened unit. What each
# setting of the units allows and why: docs/operations.md, "Releases and
# installing".
#
#   --binary PATH  the vlmfleet binary to install (default: ../vlmfleet next
#                  to this script, as in a release tarball)
#   --dry-run      print every action, do none
#   --prefix DIR   write the files under DIR instead of / (a staging tree, an
#                  image being built); the user, ownership and systemctl
#                  steps act on the running system, so they are only printed
#   --power-switch (agent) also install the root helper that lets the agent
#                  switch the power mode or GPU power limit a job asks for:
#                  vlmfleet-power.socket, vlmfleet-power@.service and
#                  /usr/local/libexec/vlmfleet-power; then set
#                  power: {switch: true} in the agent's configuration
#   --join [-]     (agent) enrol this device with the controller the join
#                  string names (vlmfleet join-token create), as the agent's
#                  user. The string is read from $VLMFLEET_JOIN, else from
#                  standard input (asked for, not shown, on a terminal);
#                  "--join -" reads standard input even with $VLMFLEET_JOIN
#                  set. Never as an argument: every local user sees the
#                  arguments (ps), and sudo logs them. The string is never
#                  printed (docs/security.md)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)

usage() {
  echo "usage: deploy/install.sh agent|controller [--binary PATH] [--dry-run] [--prefix DIR] [--power-switch] [--join [-]]" >&2
  exit 2
}

# join_argument_refused stops an install given the join string as an
# argument, without repeating it: by now it has been in the process list
# and, under sudo, in sudo's log.
join_argument_refused() {
  cat >&2 <<'EOF'
install.sh: --join takes no join string as an argument: every local user sees the arguments (ps), and sudo logs them. Give it on standard input instead:
  sudo deploy/install.sh agent --join            (paste it when asked; it is not shown)
  sudo deploy/install.sh agent --join < FILE     (a file only you may read, holding the string)
If other users share this machine, revoke that join token (vlmfleet join-token revoke ID) and make a new one.
EOF
  exit 2
}

[ $# -ge 1 ] || usage
role=$1
shift
case $role in
  agent|controller) ;;
  *) echo "install.sh: role \"$role\": must be agent or controller" >&2; usage ;;
esac
binary="$here/../vlmfleet"
dry=0
prefix=/
power=0
join_from=""
while [ $# -gt 0 ]; do
  case $1 in
    --binary) [ $# -ge 2 ] || { echo "install.sh: --binary needs a PATH" >&2; usage; }; binary=$2; shift 2 ;;
    --prefix) [ $# -ge 2 ] || { echo "install.sh: --prefix needs a DIR" >&2; usage; }; prefix=$2; shift 2 ;;
    --dry-run) dry=1; shift ;;
    --power-switch) power=1; shift ;;
    --join)
      join_from=auto
      shift
      case ${1:-} in
        -) join_from=stdin; shift ;;
        '' | --*) ;;
        *) join_argument_refused ;;
      esac
      ;;
    *) echo "install.sh: unknown argument $1" >&2; usage ;;
  esac
done

if [ -n "$join_from" ] && [ "$role" != agent ]; then
  echo "install.sh: --join is for an agent: the controller makes join strings (vlmfleet join-token create)" >&2
  exit 2
fi
if [ "$power" = 1 ] && [ "$role" != agent ]; then
  echo "install.sh: --power-switch is for the agent (it switches the device the agent measures)" >&2
  exit 2
fi
if [ ! -f "$binary" ] || [ ! -x "$binary" ]; then
  echo "install.sh: --binary $binary: no executable file there (give the vlmfleet binary of the release with --binary PATH)" >&2
  exit 1
fi
case $prefix in
  /*) ;;
  *) echo "install.sh: --prefix $prefix: must be an absolute path" >&2; exit 2 ;;
esac
root=${prefix%/}

# The join string, read with builtins only, so that no command this script
# runs has it among its arguments; the environment's copy is dropped, so
# that only the join (below) gets it.
join=""
if [ -n "$join_from" ]; then
  if [ "$join_from" = auto ] && [ -n "${VLMFLEET_JOIN:-}" ]; then
    join=$VLMFLEET_JOIN
  elif [ -t 0 ]; then
    printf 'install.sh: paste the join string (vlmfleet join-token create printed it; it is not shown), then Enter: ' >&2
    IFS= read -r -s -n 4096 join || true
    echo >&2
  else
    IFS= read -r -n 4096 join || true
  fi
  unset VLMFLEET_JOIN
  join=${join//[[:space:]]/}
  case $join in
    vlmfleet-join:*) ;;
    '') echo "install.sh: --join: no join string in \$VLMFLEET_JOIN or on standard input (give it as: deploy/install.sh agent --join < FILE)" >&2; exit 2 ;;
    *) echo "install.sh: --join: not a join string (vlmfleet-join:...): copy it whole, as vlmfleet join-token create printed it" >&2; exit 2 ;;
  esac
fi
# The system steps (user, ownership, systemctl) belong to the machine this
# runs on; with a prefix the files land elsewhere, so they are shown only.
system=1
[ -z "$root" ] || system=0
if [ "$dry" = 0 ] && [ "$system" = 1 ] && [ "$(id -u)" -ne 0 ]; then
  echo "install.sh: run as root (or with --dry-run to see what it would do)" >&2
  exit 1
fi

user=vlmfleet
unit=vlmfleet-$role.service
bin=/usr/local/bin/vlmfleet
etc=/etc/vlmfleet
if [ "$role" = agent ]; then
  config=$etc/agent.yaml
  skeleton=$here/agent.example.yaml
else
  config=$etc/controller.env
  skeleton=$here/controller.env
fi

# act runs a command that writes files (under the prefix); sys one that
# changes the running system. Both print it first, as the shell would.
# The command is printed quoted, so that a line can be run as it reads.
show() {
  printf '+'
  printf ' %q' "$@"
}
act() {
  show "$@"
  echo
  [ "$dry" = 1 ] || "$@"
}
sys() {
  if [ "$system" = 0 ]; then
    show "$@"
    echo " # not run: --prefix"
  else
    act "$@"
  fi
}
note() { echo "# $*"; }

note "installing the vlmfleet $role under ${prefix}"

# Its own user: no login, no home of its own outside its state directory.
if [ "$system" = 1 ] && getent passwd "$user" >/dev/null; then
  note "user $user exists"
else
  sys useradd --system --user-group --home-dir /var/lib/vlmfleet --no-create-home \
    --shell /usr/sbin/nologin --comment "vlmfleet $role" "$user"
fi

# Engines reach the GPU through device nodes of group video (/dev/nvhost-*,
# /dev/nvmap on a Jetson; /dev/nvidia* where the driver's udev rules give
# them to video) and, on some distributions, render (/dev/dri). The agent
# runs tegrastats and `nvpmodel -q` as its own user, without sudo (the unit
# sets NoNewPrivileges, which sudo could not pass): the fields it reads
# (RAM, CPU, GR3D_FREQ, temperatures, power rails) come from world-readable
# sysfs nodes, and a power mode it cannot read is a warning, not a failure.
if [ "$role" = agent ]; then
  for g in video render; do
    if [ "$system" = 0 ] || getent group "$g" >/dev/null; then
      sys usermod --append --groups "$g" "$user"
    fi
  done
  if [ -e "$root/etc/nv_tegra_release" ]; then
    note "Jetson (/etc/nv_tegra_release): tegrastats and nvpmodel -q run as $user, with group video; nothing else granted"
  fi
fi

# Directories: the configuration is root's (the agent's NATS credentials
# lie there, readable by the group), the state, logs and caches the user's.
act mkdir -p "$root$etc" "$root/var/lib/vlmfleet" "$root/var/log/vlmfleet" "$root/var/cache/vlmfleet" \
  "$root/usr/local/bin" "$root/etc/systemd/system"
act chmod 0750 "$root$etc" "$root/var/lib/vlmfleet" "$root/var/log/vlmfleet" "$root/var/cache/vlmfleet"
sys chown "root:$user" "$etc"
sys chown "$user:$user" /var/lib/vlmfleet /var/log/vlmfleet /var/cache/vlmfleet

# The binary is replaced: that is an upgrade.
if [ "$binary" -ef "$root$bin" ]; then
  note "$root$bin is the binary given: left as it is"
else
  act install -m 0755 "$binary" "$root$bin"
fi

# The configuration is the operator's once it exists.
had_config=0
if [ -e "$root$config" ]; then
  had_config=1
  note "keeping $config (exists)"
else
  act install -m 0640 "$skeleton" "$root$config"
  sys chown "root:$user" "$config"
fi

# --join: the device enrols itself with the controller the join string
# names. A configuration installed now is the skeleton: its id and NATS
# settings are examples, so they are commented out, and the agent takes its
# id from the host name and its NATS settings from the join. The join runs
# as the agent's user, so that the credentials it writes (beside the spool,
# under /var/lib/vlmfleet) are the agent's own; the join string travels in
# the environment, never on a command line or in this output.
if [ -n "$join" ]; then
  if [ "$had_config" = 0 ]; then
    act sed -i -E 's/^(id|nats_url|nats_credentials|nats_ca_pin|nats_ca):/# &/' "$root$config"
  fi
  join_cmd=(runuser -u "$user" -- "$bin" agent --config "$config" --join-only)
  if [ "$system" = 0 ] || [ "$dry" = 1 ]; then
    show "${join_cmd[@]}"
    echo " # the join string in \$VLMFLEET_JOIN$([ "$system" = 0 ] && echo '; not run: --prefix')"
  else
    show "${join_cmd[@]}"
    echo " # the join string in \$VLMFLEET_JOIN"
    VLMFLEET_JOIN=$join "${join_cmd[@]}"
  fi
fi

# The unit is ours: replaced on every install. Local changes go in a
# drop-in (systemctl edit $unit), which an install leaves alone.
act install -m 0644 "$here/$unit" "$root/etc/systemd/system/$unit"

# The power switch: a root helper the agent reaches through a socket of
# group vlmfleet, one request per connection; it only switches among the
# modes /etc/nvpmodel.conf lists and the limits nvidia-smi allows. Why not
# sudo or capabilities: docs/operations.md, "Power modes".
if [ "$power" = 1 ]; then
  act mkdir -p "$root/usr/local/libexec"
  act install -m 0755 "$here/vlmfleet-power" "$root/usr/local/libexec/vlmfleet-power"
  sys chown root:root /usr/local/libexec/vlmfleet-power
  act install -m 0644 "$here/vlmfleet-power.socket" "$root/etc/systemd/system/vlmfleet-power.socket"
  act install -m 0644 "$here/vlmfleet-power@.service" "$root/etc/systemd/system/vlmfleet-power@.service"
fi

sys systemctl daemon-reload
if [ "$power" = 1 ]; then
  sys systemctl enable --now vlmfleet-power.socket
  note "set power: {switch: true} in $config to let jobs switch the power"
fi
sys systemctl enable "$unit"
if [ "$had_config" = 1 ]; then
  sys systemctl restart "$unit"
else
  note "edit $config, then: systemctl start $unit"
fi
