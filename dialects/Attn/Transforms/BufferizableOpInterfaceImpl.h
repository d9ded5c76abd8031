//===- BufferizableOpInterfaceImpl.h - attn bufferization -------*- C++ -*-===//
//
// This file declares the registration of BufferizableOpInterface for the attn
// ops that reach bufferization.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_ATTN_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
#define ATTN_DIALECT_ATTN_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H

#include "mlir/IR/DialectRegistry.h"

namespace mlir {
namespace attn {

/// attn.online_attention bufferizes, as any op in destination-passing
/// style, to its buffer form (memref operands, the state updated in place).
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);

} // namespace attn
} // namespace mlir

#endif // ATTN_DIALECT_ATTN_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
