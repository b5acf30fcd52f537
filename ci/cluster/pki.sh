# Sourced by ci/cluster/up: the cluster's certificates and keys (ECDSA P-256, fresh for every
# `up`), written to $1. One CA signs everything; the identities are the ones Kubernetes'
# authorizers know (system:node:<node> in system:nodes, system:kube-scheduler, …).
make_pki() {
  local d=$1
  mkdir -p "$d"
  ( cd "$d"
    openssl ecparam -name prime256v1 -genkey -noout -out ca.key 2>/dev/null
    openssl req -x509 -new -key ca.key -subj /CN=sandprobe-cluster-ca -days 30 -out ca.crt \
      2>/dev/null
    # The service-account token signing pair.
    openssl ecparam -name prime256v1 -genkey -noout -out sa.key 2>/dev/null
    openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
    cert() {  # cert NAME SUBJECT [SAN] [usage]
      local name=$1 subj=$2 san=${3:-} usage=${4:-clientAuth}
      openssl ecparam -name prime256v1 -genkey -noout -out "$name.key" 2>/dev/null
      openssl req -new -key "$name.key" -subj "$subj" -out "$name.csr" 2>/dev/null
      {
        echo "basicConstraints=CA:FALSE"
        echo "keyUsage=critical,digitalSignature,keyEncipherment"
        echo "extendedKeyUsage=$usage"
        [[ -n $san ]] && echo "subjectAltName=$san"
      } > "$name.ext"
      openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
        -extfile "$name.ext" -out "$name.crt" 2>/dev/null
      rm -f "$name.csr" "$name.ext"
    }
    cert apiserver /CN=kube-apiserver \
      "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:$NODE_IP,IP:$API_SERVICE_IP,IP:127.0.0.1" \
      serverAuth
    cert kubelet-serving "/CN=system:node:$NODE_NAME/O=system:nodes" "DNS:$NODE_NAME,IP:$NODE_IP" \
      serverAuth
    cert admin /CN=sandprobe-admin/O=system:masters
    cert apiserver-kubelet-client /CN=kube-apiserver-kubelet-client/O=system:masters
    cert controller-manager /CN=system:kube-controller-manager
    cert scheduler /CN=system:kube-scheduler
    cert kubelet "/CN=system:node:$NODE_NAME/O=system:nodes"
    # The second node's (up --nodes 2; made always, they cost milliseconds).
    cert kubelet-serving-node2 "/CN=system:node:$NODE2_NAME/O=system:nodes" \
      "DNS:$NODE2_NAME,IP:$NODE2_IP" serverAuth
    cert kubelet-node2 "/CN=system:node:$NODE2_NAME/O=system:nodes"
    cert kube-proxy /CN=system:kube-proxy
    cert kube-router /CN=sandprobe:kube-router
    chmod 600 ./*.key
  )
}

# make_kubeconfig FILE USER CERT_DIR: a kubeconfig for USER's client certificate.
make_kubeconfig() {
  local file=$1 user=$2 d=$3
  cat > "$file" <<KCFG
apiVersion: v1
kind: Config
clusters:
- name: sandprobe-cluster
  cluster:
    server: https://$NODE_IP:6443
    certificate-authority: $d/ca.crt
users:
- name: $user
  user:
    client-certificate: $d/$user.crt
    client-key: $d/$user.key
contexts:
- name: sandprobe-cluster
  context: {cluster: sandprobe-cluster, user: $user}
current-context: sandprobe-cluster
KCFG
}
