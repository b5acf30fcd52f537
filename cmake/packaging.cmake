# Install layout and the Debian package (CPack).
#
#   cmake --install build --prefix PREFIX   lays out
#     PREFIX/bin/sandprobe, PREFIX/bin/sandprobe-reaper
#     PREFIX/share/sandprobe/{probes,suites,manifests,schema}   the tree the binary reads
#     PREFIX/share/doc/sandprobe/                               README, design notes, CI templates
#   The binary finds PREFIX/share/sandprobe from its own path (/proc/self/exe), so an installed
#   copy needs no --home (harness/cli/paths.cc).
#   ci/package builds the .deb (CPack DEB; Depends from dpkg-shlibdeps plus bubblewrap, python3).
# Included at the end of the top-level CMakeLists.txt (the targets exist by then), which sets
# SANDPROBE_INSTALL_HOME and SANDPROBE_HOME_FROM_BIN before the subdirectories.
install(TARGETS sandprobe sandprobe-reaper RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
# The probes as deployed: descriptors, scripts and the preamble; their tests stay in the tree.
install(DIRECTORY probes/ DESTINATION "${SANDPROBE_INSTALL_HOME}/probes"
        PATTERN "test_*.py" EXCLUDE
        PATTERN "probe_testing.py" EXCLUDE
        PATTERN "__pycache__" EXCLUDE)
install(DIRECTORY suites manifests DESTINATION "${SANDPROBE_INSTALL_HOME}")
install(FILES reports/schema/report.schema.json DESTINATION "${SANDPROBE_INSTALL_HOME}/schema")
install(FILES README.md docs/design.md docs/probes.md docs/traps.md
        DESTINATION "${CMAKE_INSTALL_DOCDIR}")
install(DIRECTORY ci/templates/ DESTINATION "${CMAKE_INSTALL_DOCDIR}/ci-templates"
        PATTERN "test_*.py" EXCLUDE
        PATTERN "validators" EXCLUDE
        PATTERN "__pycache__" EXCLUDE)
install(FILES ci/kubernetes/README.md ci/kubernetes/namespace.yaml ci/kubernetes/rbac.yaml
        ci/kubernetes/rbac-cluster.yaml ci/kubernetes/resourcequota.yaml
        ci/kubernetes/sandbox-deny-egress.yaml ci/kubernetes/sandbox-open.yaml
        ci/kubernetes/job.yaml DESTINATION "${CMAKE_INSTALL_DOCDIR}/kubernetes")

# cpack packages what is built (ci/package builds first) instead of building every test target.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME sandprobe)
set(CPACK_PACKAGE_VENDOR sandprobe)
set(CPACK_PACKAGE_CONTACT "sandprobe maintainers <sandprobe@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "adversarial conformance tests for sandboxes that run untrusted code")
set(CPACK_PACKAGE_DESCRIPTION
    "sandprobe deploys hostile probe scripts through a candidate sandbox and a control arm and \
renders a pass/fail matrix (terminal, Markdown, JSON, JUnit) for a CI gate or a ticket.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # sandprobe_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
# Shared libraries (yaml-cpp, fmt, curl, pugixml, ...) from dpkg-shlibdeps; what the probes and
# the default manifests run: python3 (probes, the local control), bubblewrap (the default
# candidate). util-linux (setpriv, prlimit) and coreutils (timeout) are Essential.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "bubblewrap, python3")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "docker.io")
include(CPack)
