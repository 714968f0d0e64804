// Sharing numfuse's memory the standard ways: the buffer protocol (PEP 3118),
// __array_interface__ (version 3) and DLPack (__dlpack__ /
// __dlpack_device__, versioned and unversioned capsules).
//
// Semantics, as NumPy's own views of an array: the consumer sees the array's
// memory, not a copy. Before it is handed out, every pending operation that
// writes or reads that memory runs (the consumer sees current values, and
// its writes cannot reach a read recorded earlier). While it is handed out,
// the buffer counts as exported (Buffer::exports), so every later numfuse
// operation that touches it runs before control returns to Python, in
// program order with the consumer's reads and writes. A buffer-protocol or
// DLPack export ends when the consumer releases it; __array_interface__ has
// no release, so a buffer it describes stays exported for good.
#include <cstring>
#include <memory>
#include <vector>

#include "pipeline/pipeline.h"
#include "python/bindings.h"

namespace nf::py_bind {

namespace {

const View& view_of_obj(PyObject* o) { return reinterpret_cast<PyNdArray*>(o)->arr.v; }

// The view's first element, with its memory made current for an outside reader.
char* export_memory(const View& v, const char* why) {
  if (v.buffer->pending()) flush_all(why);
  return static_cast<char*>(v.buffer->data()) + v.offset * itemsize(v.dtype);
}

// PEP 3118 format characters, as NumPy gives them (int64 is 'l' on LP64).
const char* buffer_format(DType t) {
  switch (t) {
    case DType::Bool: return "?";
    case DType::Int8: return "b";
    case DType::Int16: return "h";
    case DType::Int32: return "i";
    case DType::Int64: return sizeof(long) == 8 ? "l" : "q";
    case DType::UInt8: return "B";
    case DType::UInt16: return "H";
    case DType::UInt32: return "I";
    case DType::UInt64: return sizeof(long) == 8 ? "L" : "Q";
    case DType::Float32: return "f";
    case DType::Float64: return "d";
    case DType::Complex64: return "Zf";
    case DType::Complex128: return "Zd";
  }
  return "B";
}

// __array_interface__'s typestr (little-endian machines: numfuse's only).
const char* typestr(DType t) {
  switch (t) {
    case DType::Bool: return "|b1";
    case DType::Int8: return "|i1";
    case DType::Int16: return "<i2";
    case DType::Int32: return "<i4";
    case DType::Int64: return "<i8";
    case DType::UInt8: return "|u1";
    case DType::UInt16: return "<u2";
    case DType::UInt32: return "<u4";
    case DType::UInt64: return "<u8";
    case DType::Float32: return "<f4";
    case DType::Float64: return "<f8";
    case DType::Complex64: return "<c8";
    case DType::Complex128: return "<c16";
  }
  return "|u1";
}

// What a buffer-protocol export owns (Py_buffer::internal).
struct BufferExport {
  BufferPtr buffer;  // counted in buffer->exports until released
  std::vector<Py_ssize_t> shape, strides;
};

}  // namespace

int nd_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  try {
    const View& v = view_of_obj(self);
    const bool c = v.is_c_contiguous(), f = v.is_f_contiguous();
    auto refuse = [](const char* why) {
      PyErr_SetString(PyExc_BufferError, why);
      return -1;
    };
    if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE && v.readonly) return refuse("buffer source array is read-only");
    if ((flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS && !c) return refuse("ndarray is not C-contiguous");
    if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && !f) return refuse("ndarray is not Fortran contiguous");
    if ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS && !c && !f) return refuse("ndarray is not contiguous");
    if ((flags & PyBUF_STRIDES) != PyBUF_STRIDES && !c) return refuse("ndarray is not C-contiguous");
    char* data;
    {
      FpRequeue requeue;
      data = export_memory(v, "buffer protocol export");
    }
    auto info = std::make_unique<BufferExport>();
    info->buffer = v.buffer;
    const int64_t is = itemsize(v.dtype);
    for (int d = 0; d < v.ndim(); ++d) {
      info->shape.push_back(static_cast<Py_ssize_t>(v.shape[d]));
      info->strides.push_back(static_cast<Py_ssize_t>(v.strides[d] * is));
    }
    view->buf = data;
    view->obj = Py_NewRef(self);
    view->len = static_cast<Py_ssize_t>(v.size() * is);
    view->readonly = v.readonly ? 1 : 0;
    view->itemsize = static_cast<Py_ssize_t>(is);
    view->format = (flags & PyBUF_FORMAT) == PyBUF_FORMAT ? const_cast<char*>(buffer_format(v.dtype)) : nullptr;
    view->ndim = v.ndim();
    view->shape = (flags & PyBUF_ND) == PyBUF_ND ? info->shape.data() : nullptr;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? info->strides.data() : nullptr;
    view->suboffsets = nullptr;
    v.buffer->exports.fetch_add(1);
    view->internal = info.release();
    return 0;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (...) {
    py::detail::try_translate_exceptions();
  }
  view->obj = nullptr;
  return -1;
}

void nd_releasebuffer(PyObject*, Py_buffer* view) {
  auto* info = static_cast<BufferExport*>(view->internal);
  if (!info) return;
  info->buffer->exports.fetch_sub(1);
  delete info;
  view->internal = nullptr;
}

PyObject* nd_array_interface(PyObject* self, void*) {
  return guarded([&] {
    const View& v = view_of_obj(self);
    char* data = export_memory(v, "__array_interface__");
    // The consumer keeps this array alive but never says when it is done:
    // the memory stays exported from now on.
    v.buffer->exports.fetch_add(1);
    py::dict d;
    d["shape"] = tuple_of(v.shape);
    d["typestr"] = typestr(v.dtype);
    py::list descr;
    descr.append(py::make_tuple("", typestr(v.dtype)));
    d["descr"] = descr;
    d["data"] = py::make_tuple(py::int_(reinterpret_cast<uintptr_t>(data)), py::bool_(v.readonly));
    d["strides"] = v.is_c_contiguous() ? py::object(py::none()) : py::object(tuple_of(v.strides, itemsize(v.dtype)));
    d["version"] = 3;
    return d.release().ptr();
  });
}

PyObject* nd_data(PyObject* self, void*) { return PyMemoryView_FromObject(self); }

PyObject* nd_ctypes(PyObject* self, void*) {
  return guarded([&] {
    // NumPy's ctypes helper for NumPy's view of this memory (it keeps the
    // view, and so the export, alive).
    static py::handle asarray = py::object(py::module_::import("numpy").attr("asarray")).release();
    return py::object(asarray(py::handle(self)).attr("ctypes")).release().ptr();
  });
}

// ---------------------------------------------------------------------------
// DLPack (dlpack.h, v1.0 ABI: the structures are written out here).

namespace {

struct DLDevice {
  int32_t device_type;  // kDLCPU = 1
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;  // kDLInt 0, kDLUInt 1, kDLFloat 2, kDLComplex 5, kDLBool 6
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};
struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned*);
  uint64_t flags;
  DLTensor dl_tensor;
};
constexpr uint64_t kDLFlagReadOnly = 1ull << 0;
constexpr uint64_t kDLFlagIsCopied = 1ull << 1;
constexpr int32_t kDLCPU = 1;

DLDataType dl_dtype(DType t) {
  switch (kind(t)) {
    case Kind::Bool: return {6, 8, 1};
    case Kind::Signed: return {0, static_cast<uint8_t>(8 * itemsize(t)), 1};
    case Kind::Unsigned: return {1, static_cast<uint8_t>(8 * itemsize(t)), 1};
    case Kind::Float: return {2, static_cast<uint8_t>(8 * itemsize(t)), 1};
    case Kind::Complex: return {5, static_cast<uint8_t>(8 * itemsize(t)), 1};  // kDLComplex
  }
  return {1, 8, 1};
}

// What a DLPack export owns (manager_ctx): the array (a strong reference,
// released with the GIL), the buffer's export count, shape and strides --
// or, for an export of a device's copy, that copy (`device`, `mem`).
struct DLExport {
  PyObject* owner = nullptr;
  BufferPtr buffer;
  std::vector<int64_t> shape, strides;
  Device* device = nullptr;
  void* mem = nullptr;
  int64_t bytes = 0;
};

void drop(DLExport* ctx) {
  if (!ctx) return;
  if (ctx->device) ctx->device->free(ctx->mem, ctx->bytes);  // (the device's pool: any thread)
  else ctx->buffer->exports.fetch_sub(1);
  // A consumer may call the deleter from any thread, without the GIL.
  if (Py_IsInitialized()) {
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF(ctx->owner);
    PyGILState_Release(g);
  }
  delete ctx;
}

// A capsule named `Name` holding a new Managed tensor over v's memory at
// `data`: a capsule never consumed (still so named) releases what it holds;
// a consumer renames it ("used_...") and calls the deleter itself.
template <typename Managed, const char* Name>
PyObject* make_capsule(DLExport* ctx, const View& v, char* data, uint64_t flags, DLDevice device = {kDLCPU, 0}) {
  auto* m = new Managed{};
  if constexpr (requires { m->flags; }) {
    m->version = {1, 0};
    m->flags = flags;
  }
  m->manager_ctx = ctx;
  DLTensor& t = m->dl_tensor;
  t.data = data;
  t.device = device;
  t.ndim = v.ndim();
  t.dtype = dl_dtype(v.dtype);
  t.shape = ctx->shape.data();
  t.strides = ctx->strides.data();
  t.byte_offset = 0;
  m->deleter = [](Managed* p) {
    drop(static_cast<DLExport*>(p->manager_ctx));
    delete p;
  };
  PyObject* cap = PyCapsule_New(m, Name, [](PyObject* c) {
    if (!PyCapsule_IsValid(c, Name)) return;
    auto* p = static_cast<Managed*>(PyCapsule_GetPointer(c, Name));
    if (p && p->deleter) p->deleter(p);
  });
  if (!cap) {
    delete m;
    throw py::error_already_set();
  }
  return cap;
}
constexpr char kVersionedName[] = "dltensor_versioned";
constexpr char kUnversionedName[] = "dltensor";

// The device whose copy holds v's contents (computed there and not yet
// brought to the host) where DLPack consumers see it as a device of its
// own (not the CPU: the emulated device's memory is the host's, so NumPy
// takes it as a CPU array, sharing the host copy), or nullptr.
Device* resident_device(const View& v) {
  if (v.buffer->pending()) {
    if (!pipeline::device_target_active()) return nullptr;  // (computed on the host: no need to run it now)
    flush_all("DLPack export");
  }
  const Buffer& b = *v.buffer;
  if (!b.device() || !b.device_newer()) return nullptr;
  int32_t type = kDLCPU, id = 0;
  b.device()->dlpack_device(&type, &id);
  return type == kDLCPU ? nullptr : b.device();
}

DLDevice dl_device_of(const Device* d) {
  DLDevice r{kDLCPU, 0};
  if (d) d->dlpack_device(&r.device_type, &r.device_id);
  return r;
}

}  // namespace

PyObject* nd_dlpack(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    if (nargs > 0) throw TypeError("__dlpack__() takes no positional arguments");
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; ++i) {
      const std::string k = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i));
      PyObject* val = args[nargs + i];
      if (k == "stream") stream = val;
      else if (k == "max_version") max_version = val;
      else if (k == "dl_device") dl_device = val;
      else if (k == "copy") copy = val;
      else throw TypeError("__dlpack__() got an unexpected keyword argument '" + k + "'");
    }
    bool versioned = false;
    if (max_version != Py_None) {
      py::tuple mv = py::reinterpret_borrow<py::object>(max_version).cast<py::tuple>();
      versioned = mv.size() >= 1 && mv[0].cast<int>() >= 1;
    }
    const bool want_copy = copy != Py_None && PyObject_IsTrue(copy) == 1;
    const bool no_copy = copy != Py_None && PyObject_IsTrue(copy) == 0;
    // Where the contents are: a device's copy goes to a consumer that takes
    // that device (dl_device None or the same), as a copy of its own in the
    // device's memory (kDLFlagIsCopied; the consumer's writes then cannot
    // race numfuse's host copy); any other consumer gets the host's memory.
    const View& self_view = view_of_obj(self);
    Device* const resident = resident_device(self_view);
    const DLDevice here = dl_device_of(resident);
    DLDevice want = {kDLCPU, 0};
    if (dl_device != Py_None) {
      py::tuple dev = py::reinterpret_borrow<py::object>(dl_device).cast<py::tuple>();
      if (dev.size() != 2) throw py::value_error("__dlpack__: dl_device must be a (device type, id) pair");
      want = {dev[0].cast<int32_t>(), dev[1].cast<int32_t>()};
      const bool ok = (want.device_type == kDLCPU && want.device_id == 0) ||
                      (resident && want.device_type == here.device_type && want.device_id == here.device_id);
      if (!ok) {
        PyErr_SetString(PyExc_BufferError,
                        ("numfuse cannot export this array to DLPack device (" + std::to_string(want.device_type) +
                         ", " + std::to_string(want.device_id) + "): its contents are on (" +
                         std::to_string(here.device_type) + ", " + std::to_string(here.device_id) +
                         ") and the CPU (1, 0)")
                            .c_str());
        throw py::error_already_set();
      }
    } else {
      want = here;
    }
    const bool from_device = resident && want.device_type == here.device_type && want.device_id == here.device_id;
    if (stream != Py_None && !(from_device && here.device_type != kDLCPU))
      throw py::value_error("__dlpack__: stream must be None for an export to the CPU");
    // (On a device, numfuse's launches return when they are done: nothing
    // is pending on any stream the consumer names.)
    if (from_device) {
      if (no_copy) {
        PyErr_SetString(PyExc_BufferError,
                        "numfuse cannot share a device's copy without copying it (copy=False): export with "
                        "copy=None, or to the CPU (dl_device=(1, 0))");
        throw py::error_already_set();
      }
      const View& v = self_view;
      auto ctx = std::make_unique<DLExport>();
      ctx->device = resident;
      ctx->bytes = std::max<int64_t>(v.buffer->nbytes(), 1);
      ctx->mem = resident->alloc(ctx->bytes);  // (MemoryError when the device is full)
      resident->copy(ctx->mem, v.buffer->device_ptr(), v.buffer->nbytes());
      for (int d = 0; d < v.ndim(); ++d) {
        ctx->shape.push_back(v.shape[d]);
        ctx->strides.push_back(v.strides[d]);
      }
      char* data = static_cast<char*>(ctx->mem) + v.offset * itemsize(v.dtype);
      const uint64_t flags = (v.readonly ? kDLFlagReadOnly : 0) | kDLFlagIsCopied;
      if (v.readonly && !versioned) {
        PyErr_SetString(PyExc_BufferError,
                        "Cannot export readonly array since signalling readonly is unsupported by DLPack "
                        "(supported by newer DLPack version).");
        throw py::error_already_set();
      }
      PyObject* cap = versioned
                          ? make_capsule<DLManagedTensorVersioned, kVersionedName>(ctx.get(), v, data, flags, here)
                          : make_capsule<DLManagedTensor, kUnversionedName>(ctx.get(), v, data, flags, here);
      ctx.release();
      return cap;
    }
    // The array to export: this one, or (copy=True) a fresh copy of it.
    py::object owner = py::reinterpret_borrow<py::object>(self);
    if (want_copy) owner = py::reinterpret_borrow<py::object>(self).attr("copy")();
    const View& v = view_of_obj(owner.ptr());
    if (v.readonly && !versioned) {
      PyErr_SetString(PyExc_BufferError,
                      "Cannot export readonly array since signalling readonly is unsupported by DLPack "
                      "(supported by newer DLPack version).");
      throw py::error_already_set();
    }
    char* data = export_memory(v, "DLPack export");
    auto ctx = std::make_unique<DLExport>();
    ctx->buffer = v.buffer;
    for (int d = 0; d < v.ndim(); ++d) {
      ctx->shape.push_back(v.shape[d]);
      ctx->strides.push_back(v.strides[d]);
    }
    const uint64_t flags = (v.readonly ? kDLFlagReadOnly : 0) | (want_copy ? kDLFlagIsCopied : 0);
    PyObject* cap = versioned ? make_capsule<DLManagedTensorVersioned, kVersionedName>(ctx.get(), v, data, flags)
                              : make_capsule<DLManagedTensor, kUnversionedName>(ctx.get(), v, data, flags);
    v.buffer->exports.fetch_add(1);
    ctx->owner = owner.release().ptr();
    ctx.release();
    return cap;
  });
}

PyObject* nd_dlpack_device(PyObject* self, PyObject*) {
  return guarded([&]() -> PyObject* {
    const DLDevice d = dl_device_of(resident_device(view_of_obj(self)));
    return Py_BuildValue("(ii)", d.device_type, d.device_id);
  });
}

}  // namespace nf::py_bind
