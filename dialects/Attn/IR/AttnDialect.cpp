//===- AttnDialect.cpp - attn dialect registration ------------------------===//
//
// This file implements the `attn` dialect: registration of its operations and
// attributes, and the generated enum and attribute code.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/IR/AttnDialect.h"
#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn;

#include "dialects/Attn/IR/AttnDialect.cpp.inc"
#include "dialects/Attn/IR/AttnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Attn/IR/AttnAttrs.cpp.inc"

LogicalResult TilesAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                int64_t qBlock, int64_t kvBlock,
                                int64_t decodeKvBlock, int64_t splitTarget,
                                int64_t splitMinKeys) {
  if (qBlock > 0 && kvBlock > 0 && decodeKvBlock > 0 && splitTarget >= 0 &&
      splitMinKeys > 0)
    return success();
  return emitError() << "#attn.tiles takes positive q_block, kv_block, "
                        "decode_kv_block and split_min_keys and a split_target "
                        "of 0 or more, got q_block = "
                     << qBlock << ", kv_block = " << kvBlock
                     << ", decode_kv_block = " << decodeKvBlock
                     << ", split_target = " << splitTarget
                     << ", split_min_keys = " << splitMinKeys;
}

void AttnDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Attn/IR/AttnAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/Attn/IR/AttnOps.cpp.inc"
      >();
}
