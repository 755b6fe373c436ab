/* ops_distributed.c: the internal ops the distributed runtime's partitioner inserts on edges
 * that cross tasks (TensorFlow's _Send and _Recv, with TensorFlow's attribute names). Users never
 * write them; the master adds them to partition graphs and the worker runs them with the kernels
 * in core/src/distributed/sendrecv.c. */
#include "ops_shape.h"

const weft_op_def_t weft__ops_distributed[] = {
    /* Hands `tensor` to the step's rendezvous under tensor_name; a _Recv on recv_device pulls it. */
    WEFT__OP("_Send", WEFT__SPECS("tensor: T"), WEFT__NO_SPECS,
             WEFT__SPECS("T: type", "tensor_name: string", "send_device: string",
                         "send_device_incarnation: int", "recv_device: string",
                         "client_terminated: bool = false", "copy_on_send: bool = false"),
             1, NULL),
    /* Pulls tensor_name of the step from the task of send_device (RecvTensor). Its shape is only
     * known when it arrives. */
    WEFT__OP("_Recv", WEFT__NO_SPECS, WEFT__SPECS("tensor: tensor_type"),
             WEFT__SPECS("tensor_type: type", "tensor_name: string", "send_device: string",
                         "send_device_incarnation: int", "recv_device: string",
                         "client_terminated: bool = false"),
             1, NULL),
    WEFT__OPS_END,
};
