# dump_roundtrip.cmake — dump a model's IR after one pass and check that it round-trips.
#
#   cmake -DVCC=... -DROUNDTRIP=... -DMODEL=model.onnx -DPASS=memplan -DOUT=dir/memplan.vir
#         [-DARGS="--shape;batch=2"] -P dump_roundtrip.cmake
#
# Runs `vcc MODEL --dump-ir=PASS ARGS > OUT`, then `vir_roundtrip OUT`. vcc's own exit status is not
# this test's business (a later pass may refuse the model), but the dump must be there.

foreach(v VCC ROUNDTRIP MODEL PASS OUT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "dump_roundtrip.cmake: -D${v}=... is required")
  endif()
endforeach()

get_filename_component(dir ${OUT} DIRECTORY)
file(MAKE_DIRECTORY ${dir})
execute_process(COMMAND ${VCC} ${MODEL} --dump-ir=${PASS} ${ARGS}
                OUTPUT_FILE ${OUT} ERROR_VARIABLE err RESULT_VARIABLE rc)
file(READ ${OUT} head LIMIT 64)
if(NOT head MATCHES "^# vcc IR after ${PASS}\n")
  message(FATAL_ERROR "vcc ${MODEL} --dump-ir=${PASS} wrote no dump (exit ${rc}):\n${err}")
endif()
execute_process(COMMAND ${ROUNDTRIP} ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${OUT} does not round-trip (vir_roundtrip exit ${rc})")
endif()
