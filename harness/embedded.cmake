# The plan schema, the built-in plans and the emulated-hosts script, compiled into
# ${CMAKE_CURRENT_BINARY_DIR}/embedded.cpp (plan_schema_text(), builtin_local_plan_text(),
# builtin_nightly_plan_text(), netns_script_text(), link_script_text()). Included by harness/ and fuzz/.
set(ROCEBENCH_PLANS_DIR ${PROJECT_SOURCE_DIR}/harness/plans)
file(READ ${ROCEBENCH_PLANS_DIR}/plan.schema.json PLAN_SCHEMA)
file(READ ${ROCEBENCH_PLANS_DIR}/local.json LOCAL_PLAN)
file(READ ${ROCEBENCH_PLANS_DIR}/nightly.json NIGHTLY_PLAN)
set(ROCEBENCH_NETNS_SCRIPT ${PROJECT_SOURCE_DIR}/ci/testbeds/netns/netns.sh)
file(READ ${ROCEBENCH_NETNS_SCRIPT} NETNS_SCRIPT)
set(ROCEBENCH_LINK_SCRIPT ${PROJECT_SOURCE_DIR}/ci/testbeds/link.sh)  # netns.sh sources it from ../link.sh
file(READ ${ROCEBENCH_LINK_SCRIPT} LINK_SCRIPT)
configure_file(${PROJECT_SOURCE_DIR}/harness/src/embedded.cpp.in ${CMAKE_CURRENT_BINARY_DIR}/embedded.cpp @ONLY)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${ROCEBENCH_PLANS_DIR}/plan.schema.json
                                                                ${ROCEBENCH_PLANS_DIR}/local.json
                                                                ${ROCEBENCH_PLANS_DIR}/nightly.json
                                                                ${ROCEBENCH_NETNS_SCRIPT}
                                                                ${ROCEBENCH_LINK_SCRIPT})
