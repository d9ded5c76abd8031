//===- AttnDialect.h - attn dialect declaration ------------------*- C++ -*-===//
//
// This file declares the `attn` dialect and its enum attributes.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_ATTN_IR_ATTNDIALECT_H
#define ATTN_DIALECT_ATTN_IR_ATTNDIALECT_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "dialects/Attn/IR/AttnDialect.h.inc"
#include "dialects/Attn/IR/AttnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Attn/IR/AttnAttrs.h.inc"

#endif // ATTN_DIALECT_ATTN_IR_ATTNDIALECT_H
