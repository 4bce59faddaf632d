// The usage text of each pintoctl command, apart from the commands themselves: `--help` prints it
// without loading a command's modules (a datastore client, the agent's HTTP client), so it is instant.

import { RESOURCE_KINDS } from '../../config/index.js'

export const BGP_USAGE = `usage: pintoctl bgp decode [FILE|-] [--hex] [--as2] [--add-path] [--extended]
  FILE        raw BGP messages (default: standard input)
  --hex       the input is hex text (whitespace and # comments ignored)
  --as2       AS numbers are 2 octets (default: as the stream's OPEN says, else 4)
  --add-path  NLRI carry path identifiers (default: as the stream's OPEN says)
  --extended  messages may be up to 65535 bytes (default: as the stream's OPEN says)
`

export const IPAM_USAGE = `usage:
  pintoctl ipam show [--show-blocks] [--show-borrowed] [--ip=<IP>]
  pintoctl ipam check [--nodes=<n1,n2>] [--handles=<FILE>] [-o <FILE>] [--repair]
      the check also holds each address a pod interface of this host uses against IPAM;
      --repair allocates one that no handle holds to the attachment its interface records
  pintoctl ipam release --ip=<IP>

The store is PINTO_DATASTORE's (a directory, default /var/lib/pinto/store, or etcd://host:port[,...]);
it must exist: ipam never creates one.
`

export const NODE_USAGE = `usage:
  pintoctl node status [--api URL|unix:/path.sock] [-o json]
`

export const RESOURCES_USAGE = `usage:
  pintoctl apply -f FILE|-
  pintoctl get KIND [NAME] [-o yaml|json|wide]
  pintoctl delete KIND NAME
  pintoctl delete -f FILE|-
kinds: ${RESOURCE_KINDS.join(', ')} (plural and lower case work too, e.g. ippools, bgppeer)

The store is PINTO_DATASTORE's (a directory, default /var/lib/pinto/store, or etcd://host:port[,...]).
get and delete need one that exists; apply starts an embedded one where there is none.
`

export const ROUTES_USAGE = `usage:
  pintoctl routes [--table loc-rib|adj-rib-in|adj-rib-out|fib] [--peer NAME] [--prefix CIDR] [--max N] [-o table|json] [--api URL]
`

export const INSTALL_CNI_USAGE = `usage:
  pintoctl install-cni [--bin-dir DIR] [--conf-dir DIR] [--conf-name NAME] [--no-conf]
                       [--node PATH] [--socket PATH] [--mtu N] [--chain LIST]

  --bin-dir DIR     where the runtime looks for plugins (PINTO_CNI_BIN_DIR, default /opt/cni/bin)
  --conf-dir DIR    where the runtime reads network configs (PINTO_CNI_CONF_DIR, default /etc/cni/net.d)
  --conf-name NAME  the config's file name (default 10-pinto.conflist)
  --no-conf         install the plugins only
  --node PATH       install the bundles with this Node.js in their #! line, by absolute path, instead
                    of the single executable (the default when it is not built: this one, ${process.execPath})
  --socket PATH     the agent's socket (PINTO_CNI_SOCKET, default /var/run/pinto/pinto.sock)
  --mtu N           the pods' MTU (PINTO_CNI_MTU, default 0: the MTU the agent writes)
  --chain LIST      plugins chained after pinto, comma-separated (default: portmap when DIR has it)

An empty variable counts as unset.
`
