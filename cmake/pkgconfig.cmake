# SPDX-License-Identifier: BSD-3-Clause
# pkg-config files of the installation (lib/pkgconfig): finecast-coupling.pc, finecast-trainer.pc,
# finecast-plugin.pc and finecast.pc (every component this build has). Like the CMake package,
# they carry the MPI, NetCDF and HDF5 flags found at configure time.

# Compiler flags (-I, -D) and linker arguments of a list of include directories, definitions and
# libraries; generator expressions are left out, imported targets stand for themselves only
# through what the caller passes.
function(finecast_pc_flags out_cflags out_libs)
  cmake_parse_arguments(A "" "" "INCLUDES;DEFINES;LIBS" ${ARGN})
  set(cflags "")
  foreach(dir IN LISTS A_INCLUDES)
    if(NOT dir MATCHES "^\\$<")
      list(APPEND cflags "-I${dir}")
    endif()
  endforeach()
  foreach(def IN LISTS A_DEFINES)
    if(NOT def MATCHES "^\\$<")
      list(APPEND cflags "-D${def}")
    endif()
  endforeach()
  set(libs "")
  foreach(lib IN LISTS A_LIBS)
    if(lib MATCHES "^\\$<" OR lib STREQUAL "")
      continue()
    elseif(lib STREQUAL "Threads::Threads")
      list(APPEND libs "-pthread")
    elseif(lib MATCHES "/lib(pthread|dl|rt|m)\\.(a|so)$")
      # The C library's parts (HDF5 names libpthread.a and libdl.a): linked as the system links them.
      list(APPEND libs "-l${CMAKE_MATCH_1}")
    elseif(IS_ABSOLUTE "${lib}" OR lib MATCHES "^-")
      list(APPEND libs "${lib}")
    elseif(NOT lib MATCHES "::")
      list(APPEND libs "-l${lib}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES cflags)
  list(REMOVE_DUPLICATES libs)
  string(REPLACE ";" " " cflags "${cflags}")
  string(REPLACE ";" " " libs "${libs}")
  set(${out_cflags} "${cflags}" PARENT_SCOPE)
  set(${out_libs} "${libs}" PARENT_SCOPE)
endfunction()

# Writes lib/pkgconfig/<name>.pc.
function(finecast_pc name description requires cflags libs)
  set(PC_NAME ${name})
  set(PC_DESCRIPTION "${description}")
  set(PC_REQUIRES "${requires}")
  set(PC_CFLAGS "${cflags}")
  set(PC_LIBS "${libs}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/finecast.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/${name}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/${name}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()

file(RELATIVE_PATH PC_PREFIX_FROM_PCDIR "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
string(REGEX REPLACE "/$" "" PC_PREFIX_FROM_PCDIR "${PC_PREFIX_FROM_PCDIR}")
set(_finecast_base_cflags "-I\${includedir} -I\${includedir}/finecast")
set(_finecast_base_libs "-L\${libdir} -Wl,-rpath,\${libdir}")
finecast_pc_flags(_hdf5_cflags _hdf5_libs INCLUDES ${HDF5_INCLUDE_DIRS} DEFINES H5_USE_110_API LIBS ${HDF5_C_LIBRARIES})
set(_pc_requires "")

finecast_pc(finecast-trainer "finecast's diffusion downscaler (libfinecast_trainer; LibTorch stays private)" ""
  "${_finecast_base_cflags} ${_hdf5_cflags}"
  "${_finecast_base_libs} -lfinecast_trainer -lfinecast_options -lfinecast_common ${_hdf5_libs} -pthread")
list(APPEND _pc_requires finecast-trainer)

if(NOT FINECAST_TRAINER_ONLY)
  foreach(t finecast_mpi finecast_netcdf)
    get_target_property(_inc ${t} INTERFACE_INCLUDE_DIRECTORIES)
    get_target_property(_lib ${t} INTERFACE_LINK_LIBRARIES)
    get_target_property(_def ${t} INTERFACE_COMPILE_DEFINITIONS)
    foreach(v _inc _lib _def)
      if(NOT ${v})
        set(${v} "")
      endif()
    endforeach()
    list(APPEND _coupling_inc ${_inc})
    list(APPEND _coupling_lib ${_lib})
    list(APPEND _coupling_def ${_def})
  endforeach()
  finecast_pc_flags(_cflags _libs INCLUDES ${_coupling_inc} DEFINES ${_coupling_def} OMPI_SKIP_MPICXX=1
    MPICH_SKIP_MPICXX=1 LIBS ${_coupling_lib})
  finecast_pc(finecast-coupling "finecast's coupling layer: ICON and lat-lon grids, patches, MPI redistribution, NetCDF I/O"
    "" "${_finecast_base_cflags} ${_cflags} ${_hdf5_cflags}"
    "${_finecast_base_libs} -lfinecast_coupling -lfinecast_common ${_libs} ${_hdf5_libs} -pthread")
  finecast_pc(finecast-plugin "finecast's plugin config (plugin/config.hpp)"
    "finecast-coupling finecast-trainer yaml-cpp" "${_finecast_base_cflags}" "${_finecast_base_libs} -lfinecast_config")
  list(APPEND _pc_requires finecast-coupling finecast-plugin)
endif()
string(REPLACE ";" " " _pc_requires "${_pc_requires}")
finecast_pc(finecast "finecast: in-situ diffusion downscaling for ICON through ComIn (every component)"
  "${_pc_requires}" "" "")
