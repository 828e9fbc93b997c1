# Sourced by scripts/start and scripts/test: installs the Debian packages a command needs when they are
# missing, as root with apt-get; elsewhere it says which to install and what goes without them.

# What the run sandbox needs (src/sandbox/sandbox-provider.ts): bubblewrap for every run (without it
# Dispatch refuses to start runs), slirp4netns and nftables for environments with agent_network (the
# agent's own network, and the filter that keeps it off the host and private addresses).
SANDBOX_PACKAGES=(bwrap=bubblewrap slirp4netns=slirp4netns nft=nftables)

# install_debian_packages WITHOUT COMMAND=PACKAGE|PACKAGE...: installs each PACKAGE whose COMMAND is not
# on PATH (a bare PACKAGE is one the caller already found missing). WITHOUT says what happens when they
# cannot be installed here.
install_debian_packages() {
  local without=$1 entry missing=()
  shift
  for entry in "$@"; do
    case $entry in
      *=*) command -v "${entry%%=*}" >/dev/null 2>&1 || missing+=("${entry#*=}") ;;
      *) missing+=("$entry") ;;
    esac
  done
  [ "${#missing[@]}" -gt 0 ] || return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian packages: ${missing[*]}" >&2
    if ! { apt-get update -qq >/dev/null &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; }; then
      echo "warning: installing ${missing[*]} failed: $without." >&2
    fi
  else
    echo "warning: ${missing[*]} missing and cannot be installed here (needs root and apt-get): $without." >&2
    echo "  Install them (Debian/Ubuntu: sudo apt-get install ${missing[*]})." >&2
  fi
}
