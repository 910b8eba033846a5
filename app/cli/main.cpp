#include <iostream>
int main() { std::cout << "shardscope\n"; }
