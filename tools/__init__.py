"""hypa.tools"""
