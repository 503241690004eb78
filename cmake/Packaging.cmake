# `cpack -G DEB` (from the build folder): a Debian package of the rocebench binary, with the plans,
# netcheck profiles and plot script under /usr/share/rocebench for operators to read and copy. The
# binary needs none of those files: plans, schemas, profiles, timelines and plot.py are compiled in.
# Dependencies come from dpkg-shlibdeps (Debian's libraries); a build with the CUDA toolkit finds
# its libraries through the binary's RUNPATH (/usr/local/cuda), which Debian does not package, so a
# package for nodes without that toolkit is built with -DROCEBENCH_WITH_CUDA=OFF.
file(GLOB ROCEBENCH_PACKAGED_PLANS ${PROJECT_SOURCE_DIR}/harness/plans/*.json)
file(GLOB ROCEBENCH_PACKAGED_PROFILES ${PROJECT_SOURCE_DIR}/netcheck/profiles/*.json)
install(FILES ${ROCEBENCH_PACKAGED_PLANS} DESTINATION share/rocebench/plans)
install(FILES ${ROCEBENCH_PACKAGED_PROFILES} DESTINATION share/rocebench/profiles)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/reports/plot.py DESTINATION share/rocebench)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/rocebench)

set(CPACK_PACKAGE_NAME rocebench)
set(CPACK_PACKAGE_VENDOR "rocebench")
set(CPACK_PACKAGE_CONTACT "rocebench maintainers <rocebench@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "RoCE GPU cluster benchmarks and validation (rocebench)")
set(CPACK_PACKAGE_DESCRIPTION
    "One binary that checks hosts' RoCE configuration, measures links, collectives and training\nthroughput across the nodes of a cluster, and judges the results.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)  # 100+ MB of debug information otherwise
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
if(ROCEBENCH_HAVE_CUDA)
  # The toolkit's libraries are the RUNPATH's business, not a Debian package's.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CUDAToolkit_LIBRARY_DIR})
endif()
# Plots need matplotlib; the launchers are whichever the cluster has.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-matplotlib")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "openmpi-bin, slurm-client, rdma-core, perftest")
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)  # xz of the binary takes minutes on a small CI machine
include(CPack)
