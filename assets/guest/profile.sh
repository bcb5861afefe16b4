export PATH=/opt/tx9/bin:$PATH
