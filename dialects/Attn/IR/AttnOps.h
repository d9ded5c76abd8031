//===- AttnOps.h - attn dialect operations ------------------------*- C++ -*-===//
//
// This file declares the operations of the `attn` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_ATTN_IR_ATTNOPS_H
#define ATTN_DIALECT_ATTN_IR_ATTNOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/TilingInterface.h"

#include "dialects/Attn/IR/AttnDialect.h"

#define GET_OP_CLASSES
#include "dialects/Attn/IR/AttnOps.h.inc"

#endif // ATTN_DIALECT_ATTN_IR_ATTNOPS_H
