"""The L0 program grammar (L0-Bench `grammar_v0`): its text, recorded with every dataset, and its terminals.

`generator.py` expands these rules; the text documents exactly what it can emit. Context rules the BNF cannot say:
right-hand sides read only variables that are defined on every path to them (a variable first assigned inside an
`if` body is not defined after it; a `while` body always runs at least once, so its assignments are), a `while`
condition variable is not the condition of an enclosing loop, and `cnter_<d>` is the counter of loops at depth d.
"""

from __future__ import annotations

INT_INPUTS = ("x", "y", "z", "u", "v", "w")
INT_LOCALS = ("i", "j", "k", "a", "b", "c", "m", "n")
BOOL_INPUTS = ("cond_x", "cond_y", "cond_z")
BOOL_LOCALS = ("cond_a", "cond_b", "cond_c", "cond_d", "cond_e")
LIST_INPUTS = ("lst_x", "lst_y", "lst_z", "lst_u", "lst_v", "lst_w")

GRAMMAR = """\
<program>         ::= "def function(" <params> "):" <min_stmt_lst> <stmt_lst> "return"
<min_stmt_lst>    ::= <stmt> * int(0.4 * min_code_lines)
<stmt_lst>        ::= <stmt> | <stmt> <stmt_lst>          # one more statement with continue_probability
<stmt>            ::= <num_assignment> | <bool_assignment> | <if_block> | <while_block> | <append> | <pop>
                                                          # weighted by `operations`
<num_assignment>  ::= <int_name> "=" <expr>
<bool_assignment> ::= <bool_name> "=" <bool_expr>
<if_block>        ::= "if" <bool_var> ":" <stmt_lst>        # body one level deeper (max_scope_depth)
<while_block>     ::= "cnter_<d> = 0" <cond> "= cnter_<d> !=" <bound> "while" <cond> ":"
                      <stmt_lst> "cnter_<d> = cnter_<d> + 2" <cond> "= cnter_<d> !=" <bound>
                    | "while True:" <stmt_lst>              # with while_true_probability
<append>          ::= <list_var> ".append(" <operand> ")"
<pop>             ::= <list_var> ".pop()"
<expr>            ::= <operand> | <arith_expr> | <list_var> "[" <index> "]"
<arith_expr>      ::= <operand> "+" <number> | <number> "+" <operand> | <operand> "-" <number> | <number> "-" <operand>
<bool_expr>       ::= <operand> <comp_op> <number> | <number> <comp_op> <operand>
<comp_op>         ::= "==" | "!="
<operand>         ::= <number> | <int_var>
<index>           ::= <index_number> | <int_var>
<int_name>        ::= x | y | z | u | v | w | i | j | k | a | b | c | m | n
<bool_name>       ::= cond_x | cond_y | cond_z | cond_a | cond_b | cond_c | cond_d | cond_e
<int_var>, <bool_var>, <list_var> ::= a defined variable of that kind (parameters: x..w, cond_x..cond_z, lst_x..lst_w)
<number>          ::= 0 | 1 | ... | max_num - 1
<index_number>    ::= 0 | 1 | ... | max_list_len // 2 - 1
<bound>           ::= 4 | 6 | ... | max_while_loop - 2 (even)
"""
